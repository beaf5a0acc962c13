import type { PlanPeer } from '../../mesh/types.js';
import { align } from '../align.js';
import type { WireGuardConfig, WireGuardPeerState, WireGuardWritten } from '../types.js';
import { diffWireGuard, peerAfter, peerChange, stateAfter, type PeerChange, type WireGuardDiff } from './diff.js';

/**
 * A config a device wrote and the state that write left, its peers in the config's order (as
 * stateAfter makes them); `byKey`: those peers by public key, made when first needed and then kept
 * up to date with each patch.
 */
export interface WrittenFrom {
  config: WireGuardConfig;
  written: WireGuardWritten;
  byKey: Map<string, WireGuardPeerState> | null;
}

/** More peers changed than this share and the whole diff is as cheap; it is made instead. */
const mostChanged = 1 / 8;

function sameIPs(a: readonly string[], b: readonly string[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The same peer with the same settings (its names, what it stands for, do not reach the device). */
const samePeer = (a: PlanPeer, b: PlanPeer) =>
  a === b ||
  (a.publicKey === b.publicKey &&
    a.endpoint === b.endpoint &&
    a.persistentKeepalive === b.persistentKeepalive &&
    a.presharedKey === b.presharedKey &&
    sameIPs(a.allowedIPs, b.allowedIPs));

const byKey = (a: PeerChange, b: PeerChange) => (a.publicKey < b.publicKey ? -1 : a.publicKey > b.publicKey ? 1 : 0);

/**
 * The diff of `config` against `last.written`, found by looking only at the peers the two configs do
 * not share (a node joining or leaving adds or removes one peer of thousands), and the state its
 * write leaves: what diffWireGuard and stateAfter would give, in the same order. null where the whole
 * diff must decide: the interface changes (key, port, fwmark), a new peer's key is another's, or much
 * changed (a renumbering of the mesh's WireGuard IPs).
 *
 * `after` uses `last` up: its map of preshared-key digests and `byKey` become the new state's (the
 * memory hands the last write over once, cache.ts).
 */
export function patchedDiff(
  last: WrittenFrom,
  config: WireGuardConfig,
): { diff: WireGuardDiff; after: () => WrittenFrom } | null {
  const older = last.config;
  const before = last.written;
  if (
    config.privateKey !== older.privateKey ||
    config.listenPort !== older.listenPort ||
    (config.fwmark ?? 0) !== (older.fwmark ?? 0)
  )
    return null;
  // One state peer per peer of the last config, in its order.
  if (before.state.peers.length !== older.peers.length) return null;
  const limit = Math.max(16, Math.floor(config.peers.length * mostChanged));
  const gone: number[] = [];
  const taken = align(older.peers, config.peers, samePeer, gone, limit);
  if (!taken) return null;
  // Nothing differs (the plan reused, or planned again the same): the last state is this one's.
  if (gone.length === 0 && taken.every((j, i) => j === i))
    return { diff: { interface: {}, peers: [] }, after: () => ({ ...last, config }) };

  const have = last.byKey ?? new Map(before.state.peers.map((p) => [p.publicKey, p]));
  const goneKeys = new Set(gone.map((j) => older.peers[j]!.publicKey));
  const fresh: PlanPeer[] = [];
  const freshKeys = new Set<string>();
  for (let i = 0; i < config.peers.length; i++) {
    if (taken[i] !== -1) continue;
    const p = config.peers[i]!;
    // Twice in the config, or the key of a peer kept as it was: the whole diff names the duplicate.
    if (freshKeys.has(p.publicKey) || (have.has(p.publicKey) && !goneKeys.has(p.publicKey))) return null;
    freshKeys.add(p.publicKey);
    fresh.push(p);
  }
  const digests = before.presharedKeyDigests;
  // diffWireGuard's order: removes, updates, adds, each by key.
  const removes: PeerChange[] = [];
  for (const key of goneKeys) if (!freshKeys.has(key)) removes.push({ kind: 'remove', publicKey: key });
  const updates: PeerChange[] = [];
  const adds: PeerChange[] = [];
  for (const p of fresh) {
    const current = goneKeys.has(p.publicKey) ? have.get(p.publicKey) : undefined;
    const change = peerChange(current, p, digests.get(p.publicKey), true);
    if (change) (change.kind === 'add' ? adds : updates).push(change);
  }
  const diff: WireGuardDiff = {
    interface: {},
    peers: [...removes.sort(byKey), ...updates.sort(byKey), ...adds.sort(byKey)],
  };

  const after = (): WrittenFrom => {
    for (const key of goneKeys) {
      if (freshKeys.has(key)) continue;
      have.delete(key);
      digests.delete(key);
    }
    const touched = new Set(diff.peers.map((c) => c.publicKey));
    const peers = new Array<WireGuardPeerState>(config.peers.length);
    for (let i = 0; i < config.peers.length; i++) {
      const j = taken[i]!;
      if (j !== -1) {
        peers[i] = before.state.peers[j]!;
        continue;
      }
      const p = config.peers[i]!;
      const had = goneKeys.has(p.publicKey) ? have.get(p.publicKey) : undefined;
      const digest = digests.get(p.publicKey);
      digests.delete(p.publicKey);
      const peer = peerAfter(p, had, digest, touched.has(p.publicKey), digests);
      have.set(p.publicKey, peer);
      peers[i] = peer;
    }
    const written = { state: { ...before.state, peers }, presharedKeyDigests: digests };
    return { config, written, byKey: have };
  };
  return { diff, after };
}

/**
 * What a device diffs with: the whole diff against the state it is given, or, when that state is the
 * very one its own last write left (the memory hands it back on a cluster event's pass), a patch of
 * that write (patchedDiff). The cache of the WireGuard step lives here, in the device, beside the
 * whole config it keeps for a wireguard-go restart.
 */
export class PeerDiffer {
  private last: WrittenFrom | null = null;
  /** How many diffs were patched: tests see which path a pass took. */
  patches = 0;

  /**
   * The diff that turns `current` into `config`, and the state its write leaves (asked for only once
   * the write succeeded, and only when someone keeps it).
   */
  diff(current: WireGuardWritten, config: WireGuardConfig): { diff: WireGuardDiff; after: () => WireGuardWritten } {
    const last = this.last;
    // Used up by this diff: a write that fails leaves no state to patch from.
    this.last = null;
    const patch = last !== null && last.written === current ? patchedDiff(last, config) : null;
    if (patch) {
      this.patches++;
      return {
        diff: patch.diff,
        after: () => {
          this.last = patch.after();
          return this.last.written;
        },
      };
    }
    const diff = diffWireGuard(current.state, config, current.presharedKeyDigests);
    return {
      diff,
      after: () => {
        const written = stateAfter(current.state, current.presharedKeyDigests, config, diff);
        this.last = { config, written, byKey: null };
        return written;
      },
    };
  }
}
