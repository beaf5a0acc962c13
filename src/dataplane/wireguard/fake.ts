import { presharedKeyDigest } from '../../wireguard/dump.js';
import { publicKeyOf } from '../../wireguard/keys.js';
import { newPeerState } from '../../wireguard/state.js';
import type {
  DiffAgainst,
  Ops,
  PeerChanges,
  ReconcileOptions,
  WireGuardConfig,
  WireGuardDevice,
  WireGuardPeerState,
  WireGuardState,
  WireGuardWritten,
} from '../types.js';
import { describeDiff, isEmptyDiff, normalizeEndpoint, peerChangesOf, type WireGuardDiff } from './diff.js';
import { detachedError } from './detached.js';
import { PeerDiffer } from './incremental.js';

function clone(state: WireGuardState): WireGuardState {
  return { ...state, peers: state.peers.map((p) => ({ ...p, allowedIPs: [...p.allowedIPs] })) };
}

/**
 * An in-memory WireGuard device that behaves like `wg set` on a real one (the same contract
 * tests run against both): allowed IPs move between peers, a null endpoint leaves the learned
 * one, sessions (handshake, counters) of untouched peers survive.
 */
export class FakeWireGuardDevice implements WireGuardDevice {
  lastOps: Ops = { writes: 0, details: [] };
  /** Every write configure() made, in order (for tests of the layers above). */
  readonly history: string[] = [];
  private exists = false;
  /** As the real device's: once detached, ensure() creates nothing. */
  private detached = false;
  private state: WireGuardState = { publicKey: null, listenPort: 0, fwmark: 0, peers: [] };
  private digests = new Map<string, string>();
  /** As the real device's: a cluster event's pass patches the last write (incremental.ts). */
  readonly differ = new PeerDiffer();

  constructor(readonly name: string = 'kilo0') {}

  async ensure(): Promise<boolean> {
    return this.create();
  }

  private async create(): Promise<boolean> {
    if (this.exists) return false;
    if (this.detached) throw detachedError(this.name);
    this.exists = true;
    // Like WireGuard with no port set: some free port.
    this.state = { publicKey: null, listenPort: 40000 + Math.floor(Math.random() * 20000), fwmark: 0, peers: [] };
    this.digests.clear();
    return true;
  }

  private need(): void {
    if (!this.exists) throw new Error(`WireGuard interface ${this.name} does not exist`);
  }

  async read(): Promise<WireGuardState> {
    this.need();
    return clone(this.state);
  }

  async dump(): Promise<WireGuardWritten> {
    this.need();
    return { state: clone(this.state), presharedKeyDigests: new Map(this.digests) };
  }

  async configure(
    config: WireGuardConfig,
    options: ReconcileOptions & DiffAgainst<WireGuardWritten> = {},
  ): Promise<PeerChanges> {
    this.need();
    // Diffed against `current` when given, as the real device: the write then goes to what is here.
    const current = options.current ?? { state: clone(this.state), presharedKeyDigests: new Map(this.digests) };
    const { diff, after } = this.differ.diff(current, config);
    const wrote = () => {
      if (options.wrote) options.wrote(after());
    };
    if (isEmptyDiff(diff)) {
      this.lastOps = { writes: 0, details: [] };
      wrote();
      return peerChangesOf(diff);
    }
    this.apply(diff);
    const details = describeDiff(this.name, diff);
    this.history.push(...details);
    this.lastOps = { writes: details.length, details };
    wrote();
    return peerChangesOf(diff);
  }

  async detach(): Promise<void> {
    this.detached = true;
  }

  async destroy(): Promise<void> {
    this.exists = false;
    this.state = { publicKey: null, listenPort: 0, fwmark: 0, peers: [] };
    this.digests.clear();
  }

  /** Test hook: a handshake with `publicKey` happened at `unixSeconds`, moving some bytes. */
  handshake(publicKey: string, unixSeconds: number, bytes = 148): void {
    const p = this.peer(publicKey);
    p.latestHandshake = unixSeconds;
    p.rxBytes += bytes;
    p.txBytes += bytes;
  }

  /** Test hook: WireGuard learned the peer's endpoint from its packets (roaming, NAT). */
  learnEndpoint(publicKey: string, endpoint: string): void {
    this.peer(publicKey).endpoint = normalizeEndpoint(endpoint);
  }

  private peer(publicKey: string): WireGuardPeerState {
    const p = this.state.peers.find((q) => q.publicKey === publicKey);
    if (!p) throw new Error(`WireGuard interface ${this.name} has no peer ${publicKey}`);
    return p;
  }

  private apply(diff: WireGuardDiff): void {
    const s = this.state;
    if (diff.interface.listenPort !== undefined) s.listenPort = diff.interface.listenPort;
    if (diff.interface.fwmark !== undefined) s.fwmark = diff.interface.fwmark;
    if (diff.interface.privateKey !== undefined) s.publicKey = publicKeyOf(diff.interface.privateKey);
    for (const change of diff.peers) {
      if (change.kind === 'remove') {
        s.peers = s.peers.filter((p) => p.publicKey !== change.publicKey);
        this.digests.delete(change.publicKey);
        continue;
      }
      let peer = s.peers.find((p) => p.publicKey === change.publicKey);
      if (!peer) {
        peer = newPeerState(change.publicKey);
        s.peers.push(peer);
      }
      const set = change.set;
      if (set.endpoint !== undefined) peer.endpoint = normalizeEndpoint(set.endpoint);
      if (set.allowedIPs !== undefined) {
        const claimed = new Set(set.allowedIPs);
        // An allowed IP belongs to one peer: claiming it takes it from the others.
        for (const other of s.peers)
          if (other !== peer) other.allowedIPs = other.allowedIPs.filter((a) => !claimed.has(a));
        peer.allowedIPs = [...set.allowedIPs];
      }
      if (set.persistentKeepalive !== undefined) peer.persistentKeepalive = set.persistentKeepalive;
      if (set.presharedKey !== undefined) {
        peer.hasPresharedKey = set.presharedKey !== null;
        if (set.presharedKey === null) this.digests.delete(peer.publicKey);
        else this.digests.set(peer.publicKey, presharedKeyDigest(set.presharedKey));
      }
    }
    s.peers.sort((a, b) => (a.publicKey < b.publicKey ? -1 : a.publicKey > b.publicKey ? 1 : 0));
  }
}
