import { Cidr, IP, isCanonicalPrefix4 } from '../../net/cidr.js';
import { presharedKeyDigest } from '../../wireguard/dump.js';
import { checkedPrivateKey, publicKeyOf } from '../../wireguard/keys.js';
import type { PeerChanges, WireGuardConfig, WireGuardPeerState, WireGuardState } from '../types.js';

/** Settings of a peer that a change writes; an absent field is left as it is. */
export interface PeerSettings {
  endpoint?: string;
  allowedIPs?: string[];
  persistentKeepalive?: number;
  /** The new preshared key, or null to remove it. Secret: never logged. */
  presharedKey?: string | null;
}

export type PeerChange =
  | { kind: 'remove'; publicKey: string }
  | { kind: 'update'; publicKey: string; set: PeerSettings }
  | { kind: 'add'; publicKey: string; set: PeerSettings };

export interface InterfaceChanges {
  listenPort?: number;
  fwmark?: number;
  /** The new private key. Secret: never logged. */
  privateKey?: string;
}

/**
 * What has to be written to make a device match a config. Peers come removes first, then
 * updates, then adds: an allowed IP moving from a removed or updated peer to a new one is
 * released before it is claimed.
 */
export interface WireGuardDiff {
  interface: InterfaceChanges;
  peers: PeerChange[];
}

/** A config that cannot be applied (a plan bug); names the peer. */
export class WireGuardConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WireGuardConfigError';
  }
}

/** The allowed IP as WireGuard reports it: host bits cleared, canonical address text. */
export function normalizeAllowedIP(value: string): string {
  // A plan's allowed IPs are canonical IPv4 prefixes, thousands on a first apply: no Cidr for them.
  if (isCanonicalPrefix4(value)) return value;
  const v = value.trim();
  return Cidr.tryParse(v)?.networkText ?? v;
}

/** `ip:port` / `[ipv6]:port` with the address in canonical form; DNS names are left as written. */
export function normalizeEndpoint(value: string): string {
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(value) ?? /^([^:]+):(\d+)$/.exec(value);
  if (!m) return value;
  const [, host, port] = m as unknown as [string, string, string];
  const [addr, zone] = host.split('%', 2) as [string, string | undefined];
  const ip = IP.tryParse(addr);
  if (!ip) return value;
  const text = zone === undefined ? ip.text : `${ip.text}%${zone}`;
  return ip.family === 6 ? `[${text}]:${Number(port)}` : `${text}:${Number(port)}`;
}

function allowedSet(list: readonly string[]): string[] {
  return [...new Set(list.map(normalizeAllowedIP))].sort();
}

/** `list` sorted; itself when it already is (the remembered state's lists are). */
function sorted(list: readonly string[]): readonly string[] {
  for (let i = 1; i < list.length; i++) if (list[i - 1]! > list[i]!) return [...list].sort();
  return list;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/**
 * Whether two lists hold the same values in any order. wireguard-go lists a peer's allowed IPs in
 * its own order; a peer has a few, so they are looked up rather than copied and sorted
 * (docs/performance.md#wireguard). Only a fast path: a "no" is settled by the normalized comparison.
 */
function sameMembers(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  if (a.length > 8) return sameList(sorted(a), sorted(b));
  return a.every((v) => b.includes(v)) && b.every((v) => a.includes(v));
}

function byKey(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function peerUpdate(
  current: WireGuardPeerState,
  desired: WireGuardConfig['peers'][number],
  currentDigest: string | undefined,
  digestsKnown: boolean,
): PeerSettings {
  const set: PeerSettings = {};
  // A null endpoint means "wherever WireGuard last saw it" (a peer behind NAT): never fight
  // the roaming endpoint WireGuard learned.
  // Equal text is the same endpoint: only a difference is worth normalizing (thousands of peers).
  if (
    desired.endpoint !== null &&
    desired.endpoint !== current.endpoint &&
    normalizeEndpoint(desired.endpoint) !== (current.endpoint && normalizeEndpoint(current.endpoint))
  ) {
    set.endpoint = desired.endpoint;
  }
  // Plans hold canonical prefixes, and the device reports them canonical (remembered state,
  // stateAfter, also sorted): the plain comparison settles most peers without normalizing
  // thousands of IPs.
  if (!sameMembers(desired.allowedIPs, current.allowedIPs)) {
    const allowed = allowedSet(desired.allowedIPs);
    if (!sameList(allowed, allowedSet(current.allowedIPs))) set.allowedIPs = allowed;
  }
  if (desired.persistentKeepalive !== current.persistentKeepalive)
    set.persistentKeepalive = desired.persistentKeepalive;
  if (desired.presharedKey === null) {
    if (current.hasPresharedKey) set.presharedKey = null;
  } else if (!current.hasPresharedKey || (digestsKnown && currentDigest !== presharedKeyDigest(desired.presharedKey))) {
    set.presharedKey = desired.presharedKey;
  }
  return set;
}

/**
 * The change that makes the device's peer `current` (absent: it has none with that key) the desired
 * `d`; null when there is nothing to write.
 */
export function peerChange(
  current: WireGuardPeerState | undefined,
  d: WireGuardConfig['peers'][number],
  currentDigest: string | undefined,
  digestsKnown: boolean,
): PeerChange | null {
  if (!current) {
    const set: PeerSettings = { allowedIPs: allowedSet(d.allowedIPs) };
    if (d.endpoint !== null) set.endpoint = d.endpoint;
    if (d.persistentKeepalive !== 0) set.persistentKeepalive = d.persistentKeepalive;
    if (d.presharedKey !== null) set.presharedKey = d.presharedKey;
    return { kind: 'add', publicKey: d.publicKey, set };
  }
  const set = peerUpdate(current, d, currentDigest, digestsKnown);
  return Object.keys(set).length > 0 ? { kind: 'update', publicKey: d.publicKey, set } : null;
}

/**
 * The writes that turn `current` into `desired`; an unchanged peer produces nothing.
 * `presharedKeyDigests` (from parseDump) lets a changed preshared key be noticed; without it
 * only presence is compared.
 * @throws WireGuardConfigError when two desired peers share a public key.
 */
export function diffWireGuard(
  current: WireGuardState,
  desired: WireGuardConfig,
  presharedKeyDigests?: ReadonlyMap<string, string>,
): WireGuardDiff {
  const iface: InterfaceChanges = {};
  // Port 0 asks WireGuard to pick one; what it picked is then the right port, not a change.
  if (desired.listenPort !== 0 && desired.listenPort !== current.listenPort) iface.listenPort = desired.listenPort;
  if ((desired.fwmark ?? 0) !== current.fwmark) iface.fwmark = desired.fwmark ?? 0;
  // A device with no key yet (a first apply) takes ours without its public half being derived: the
  // X25519 maths (and loading node:crypto for it) is left out of a first apply.
  if (current.publicKey === null) iface.privateKey = checkedPrivateKey(desired.privateKey);
  else if (publicKeyOf(desired.privateKey) !== current.publicKey) iface.privateKey = desired.privateKey;

  const have = new Map(current.peers.map((p) => [p.publicKey, p]));
  const want = new Map<string, WireGuardConfig['peers'][number]>();
  for (const p of desired.peers) {
    if (want.has(p.publicKey))
      throw new WireGuardConfigError(
        `two WireGuard peers with public key ${p.publicKey}: ${want.get(p.publicKey)!.names.join(',')} and ${p.names.join(',')}`,
      );
    want.set(p.publicKey, p);
  }

  const removes: PeerChange[] = [];
  const updates: PeerChange[] = [];
  const adds: PeerChange[] = [];
  // Each list sorted by key once made, mostly empty, not all keys twice: docs/performance.md#wireguard.
  for (const key of have.keys()) {
    if (!want.has(key)) removes.push({ kind: 'remove', publicKey: key });
  }
  for (const [key, d] of want) {
    const change = peerChange(have.get(key), d, presharedKeyDigests?.get(key), presharedKeyDigests !== undefined);
    if (change) (change.kind === 'add' ? adds : updates).push(change);
  }
  const order = (a: PeerChange, b: PeerChange) => byKey(a.publicKey, b.publicKey);
  return { interface: iface, peers: [...removes.sort(order), ...updates.sort(order), ...adds.sort(order)] };
}

export function isEmptyDiff(diff: WireGuardDiff): boolean {
  return diff.peers.length === 0 && Object.keys(diff.interface).length === 0;
}

export function peerChangesOf(diff: WireGuardDiff): PeerChanges {
  const of = (kind: PeerChange['kind']) => diff.peers.filter((p) => p.kind === kind).map((p) => p.publicKey);
  return { added: of('add'), removed: of('remove'), updated: of('update') };
}

function describeSettings(s: PeerSettings): string {
  const parts: string[] = [];
  if (s.endpoint !== undefined) parts.push(`endpoint ${s.endpoint}`);
  if (s.allowedIPs !== undefined) parts.push(`allowed-ips ${s.allowedIPs.join(',') || '(none)'}`);
  if (s.persistentKeepalive !== undefined) parts.push(`persistent-keepalive ${s.persistentKeepalive}`);
  if (s.presharedKey !== undefined) parts.push(s.presharedKey === null ? 'preshared-key removed' : 'preshared-key set');
  return parts.join(' ');
}

/** How many lines describeDiff makes of `diff`: one for the interface if it changes, one per peer. */
export function writesOf(diff: WireGuardDiff): number {
  const i = diff.interface;
  const iface = i.listenPort !== undefined || i.fwmark !== undefined || i.privateKey !== undefined;
  return (iface ? 1 : 0) + diff.peers.length;
}

/** One line per change, for logs and Ops; secrets appear only as "set"/"changed". */
export function describeDiff(device: string, diff: WireGuardDiff): string[] {
  const lines: string[] = [];
  const i = diff.interface;
  const ifaceParts: string[] = [];
  if (i.listenPort !== undefined) ifaceParts.push(`listen-port ${i.listenPort}`);
  if (i.fwmark !== undefined) ifaceParts.push(`fwmark 0x${i.fwmark.toString(16)}`);
  if (i.privateKey !== undefined) ifaceParts.push(`private-key changed (public key ${publicKeyOf(i.privateKey)})`);
  if (ifaceParts.length > 0) lines.push(`wireguard ${device}: ${ifaceParts.join(' ')}`);
  for (const p of diff.peers) {
    const rest = p.kind === 'remove' ? '' : ` ${describeSettings(p.set)}`;
    lines.push(`wireguard ${device}: ${p.kind} peer ${p.publicKey}${rest}`);
  }
  return lines;
}

/**
 * The device as it is once `diff` (the diff of `desired` against `current`) has been written: what
 * the next diff can be made against without reading the device. A peer the diff left alone is
 * taken over as it was; one whose endpoint is left to WireGuard (null) keeps the one it had;
 * counters and handshakes of changed peers are not known and read as zero.
 */
export function stateAfter(
  current: WireGuardState,
  currentDigests: ReadonlyMap<string, string> | undefined,
  desired: WireGuardConfig,
  diff: WireGuardDiff,
): { state: WireGuardState; presharedKeyDigests: Map<string, string> } {
  const had = new Map(current.peers.map((p) => [p.publicKey, p]));
  const touched = new Set(diff.peers.map((c) => c.publicKey));
  const presharedKeyDigests = new Map<string, string>();
  const peers = desired.peers.map((p) =>
    peerAfter(p, had.get(p.publicKey), currentDigests?.get(p.publicKey), touched.has(p.publicKey), presharedKeyDigests),
  );
  return {
    state: {
      publicKey: publicKeyOf(desired.privateKey),
      listenPort: desired.listenPort !== 0 ? desired.listenPort : current.listenPort,
      fwmark: desired.fwmark ?? 0,
      peers,
    },
    presharedKeyDigests,
  };
}

/**
 * The desired peer `p` as the device holds it once a diff has been written: `before` (the device's
 * peer with that key, if any) when the diff left it alone (`touched` false), else as written; its
 * preshared key's digest goes into `digests`.
 */
export function peerAfter(
  p: WireGuardConfig['peers'][number],
  before: WireGuardPeerState | undefined,
  digest: string | undefined,
  touched: boolean,
  digests: Map<string, string>,
): WireGuardPeerState {
  if (before && !touched && (p.presharedKey === null || digest !== undefined)) {
    if (digest !== undefined) digests.set(p.publicKey, digest);
    return before;
  }
  if (p.presharedKey !== null) digests.set(p.publicKey, presharedKeyDigest(p.presharedKey));
  return {
    publicKey: p.publicKey,
    endpoint: p.endpoint ?? before?.endpoint ?? null,
    allowedIPs: allowedSet(p.allowedIPs),
    persistentKeepalive: p.persistentKeepalive,
    hasPresharedKey: p.presharedKey !== null,
    latestHandshake: 0,
    rxBytes: 0,
    txBytes: 0,
  };
}
