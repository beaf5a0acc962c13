/**
 * Conflicts between objects that are each valid on their own: two nodes with one key, overlapping
 * pod CIDRs, a Peer claiming a node's addresses. Resolved before the topology is built, by one
 * documented, stable order, so that every plan keeps these invariants whatever the input:
 *   - no two WireGuard peers share a public key or an allowed IP;
 *   - no node routes its own pod CIDR, internal IP or WireGuard IP into the tunnel;
 *   - no two routes of one table share a destination.
 * (Catch-all prefixes never get this far: the model refuses them.)
 *
 * The order: the WireGuard subnet first, then Nodes by name, then Peers by name. A Node that
 * claims what an earlier claimant holds drops out whole; a Peer loses the allowed IP (the contract:
 * "the first by name keeps it") and drops out when its key is taken. (Objects that
 * share a name never get here: parseCluster drops them all.) Pure, so every agent agrees.
 */
import type { Cidr } from '../net/cidr.js';
import { key6, sameBits } from '../net/aggregate6.js';
import type { ByFamily } from '../net/family.js';
import { ValidationError } from '../model/errors.js';
import type { KiloNode, KiloPeer } from '../model/types.js';
import { inNameOrder } from './order.js';

export interface Resolved {
  nodes: KiloNode[];
  peers: KiloPeer[];
  /** One per dropped object or allowed IP, naming it, the field, the value and the earlier claimant. */
  conflicts: ValidationError[];
}

const bits = Array.from({ length: 256 }, (_, b) => b.toString(2).padStart(8, '0'));

/**
 * Claimed prefixes of one family by length: the key of a prefix within its length is its masked
 * address (a 32-bit integer for IPv4, the string of its bits for IPv6;
 * docs/performance.md#address-arithmetic).
 */
class ByLength<K, O> {
  private readonly maps: Map<K, O>[] = [];
  /** The lengths that hold any prefix, ascending: a lookup of ancestors tries only these. */
  readonly lengths: number[] = [];

  get(len: number, key: K): O | undefined {
    return this.maps[len]?.get(key);
  }

  has(len: number, key: K): boolean {
    return this.maps[len]?.has(key) ?? false;
  }

  set(len: number, key: K, owner: O): void {
    let m = this.maps[len];
    if (!m) {
      m = this.maps[len] = new Map();
      this.lengths.push(len);
      this.lengths.sort((a, b) => a - b);
    }
    m.set(key, owner);
  }
}

/** The IPv4 address masked to `len` bits, as a signed 32-bit integer (docs/performance.md#address-arithmetic). */
const mask4 = (v: number, len: number) => (len === 0 ? 0 : v & (-1 << (32 - len)));

/**
 * Prefixes claimed so far, with their owners. `find` answers "does this prefix overlap a claimed
 * one" in time proportional to the prefix length, not the number of claims: two prefixes overlap
 * exactly when one contains the other, so it looks up the prefix's ancestors among the claims and
 * the prefix itself among the claims' ancestors.
 */
export class PrefixClaims<O = string> {
  private readonly exact4 = new ByLength<number, O>();
  /**
   * IPv4 claims' ancestors, only at the lengths `find` has asked about (a few: pod CIDRs, host
   * addresses, Peers' prefixes), each the first claimant inside, not at all 32
   * (docs/performance.md#address-arithmetic).
   */
  private readonly inside4: (Map<number, O> | undefined)[] = [];
  private readonly insideLengths4: number[] = [];
  /** Every IPv4 claim in order (address, length, owner), to fill a length asked about the first time. */
  private readonly claims4: (number | O)[] = [];
  private readonly exact6 = new ByLength<string, O>();
  private readonly inside6 = new ByLength<string, O>();

  find(c: Cidr): O | null {
    if (c.family === 4) {
      const v = c.network.v4;
      const lengths = this.exact4.lengths;
      for (let i = 0; i < lengths.length; i++) {
        const len = lengths[i]!;
        if (len > c.prefix) break;
        const owner = this.exact4.get(len, mask4(v, len));
        if (owner !== undefined) return owner;
      }
      return this.inside4At(c.prefix).get(mask4(v, c.prefix)) ?? null;
    }
    const k = bitsOf(c);
    const lengths = this.exact6.lengths;
    for (let i = 0; i < lengths.length; i++) {
      const len = lengths[i]!;
      if (len > c.prefix) break;
      const owner = this.exact6.get(len, k.slice(0, len));
      if (owner !== undefined) return owner;
    }
    return this.inside6.get(c.prefix, k.slice(0, c.prefix)) ?? null;
  }

  claim(c: Cidr, owner: O): void {
    // A claim marks all its ancestors, so the first one already marked has its own marked too.
    if (c.family === 4) {
      const v = c.network.v4;
      if (!this.exact4.has(c.prefix, mask4(v, c.prefix))) this.exact4.set(c.prefix, mask4(v, c.prefix), owner);
      this.claims4.push(v, c.prefix, owner);
      for (let i = 0; i < this.insideLengths4.length; i++) {
        const len = this.insideLengths4[i]!;
        if (len < c.prefix) {
          const m = this.inside4[len]!;
          const key = mask4(v, len);
          if (!m.has(key)) m.set(key, owner);
        }
      }
      return;
    }
    const k = bitsOf(c);
    if (!this.exact6.has(c.prefix, k.slice(0, c.prefix))) this.exact6.set(c.prefix, k.slice(0, c.prefix), owner);
    for (let len = c.prefix - 1; len >= 0; len--) {
      if (this.inside6.has(len, k.slice(0, len))) break;
      this.inside6.set(len, k.slice(0, len), owner);
    }
  }

  /** The first claimant inside each prefix of length `len`, by its masked address. */
  private inside4At(len: number): Map<number, O> {
    let m = this.inside4[len];
    if (m) return m;
    m = this.inside4[len] = new Map();
    this.insideLengths4.push(len);
    const claims = this.claims4;
    for (let i = 0; i < claims.length; i += 3) {
      const prefix = claims[i + 1] as number;
      if (len < prefix) {
        const key = mask4(claims[i] as number, len);
        if (!m.has(key)) m.set(key, claims[i + 2] as O);
      }
    }
    return m;
  }
}

function bitsOf(c: Cidr): string {
  let s = '';
  for (const x of c.network.bytes) s += bits[x]!;
  return s;
}

/**
 * Who holds a key or a prefix: the WireGuard subnet (its description), a Node or a Peer. Named only
 * when a conflict is reported, not for each of thousands of claimants.
 */
type Holder = string | KiloNode | KiloPeer;

const named = (h: Holder) =>
  typeof h === 'string' ? h : `${'publicKey' in h ? 'Peer' : 'Node'} ${JSON.stringify(h.name)}`;

const keyField = 'metadata.annotations["kilo.squat.ai/key"]';
const internalIPField = 'metadata.annotations["kilo.squat.ai/internal-ip"]';

function dropNode(conflicts: ValidationError[], n: KiloNode, field: string, value: string, holder: Holder): void {
  conflicts.push(new ValidationError(named(n), field, value, `already held by ${named(holder)}`));
}

/** Resolves the conflicts among ready nodes and Peers; `subnet` (the WireGuard IPs) is claimed first. */
export function resolveConflicts(
  nodes: readonly KiloNode[],
  peers: readonly KiloPeer[],
  subnet: Cidr | ByFamily<Cidr>,
): Resolved {
  const subnets: ByFamily<Cidr> = Array.isArray(subnet) ? (subnet as ByFamily<Cidr>) : [subnet as Cidr];
  return withoutConflicts(nodes, peers, subnets) ?? resolveInOrder(nodes, peers, subnets);
}

/** 2^(32 - prefix): the number of addresses of an IPv4 prefix. */
const size4 = Array.from({ length: 33 }, (_, prefix) => 2 ** (32 - prefix));

/**
 * The answer when nothing conflicts, which is every healthy cluster: every key once, and no two of
 * all the prefixes claimed (the subnet, pod CIDRs, internal IPs, Peers' allowed IPs) overlapping.
 * Then resolveInOrder would keep every object as it is, and this finds that out with one native
 * sort of numbers instead of thousands of claims and look-ups (docs/performance.md#address-arithmetic).
 * Null when anything might conflict: resolveInOrder decides then.
 */
function withoutConflicts(
  nodes: readonly KiloNode[],
  peers: readonly KiloPeer[],
  subnets: ByFamily<Cidr>,
): Resolved | null {
  let count = 2 + 2 * nodes.length;
  for (let i = 0; i < peers.length; i++) count += peers[i]!.allowedIPs.length;
  // Each prefix as start * 64 + length (below 2^39, exact): sorted, a container comes first.
  const prefixes = new Float64Array(count);
  let n = 0;
  // A dual-stack mesh's IPv6 prefixes, checked apart (ipv6Disjoint); none in a mesh of IPv4.
  const six: Cidr[] = [];
  const add = (c: Cidr): void => {
    if (c.family === 4) prefixes[n++] = (c.network.v4 >>> 0) * 64 + c.prefix;
    else six.push(c);
  };
  for (let i = 0; i < subnets.length; i++) add(subnets[i]!);
  const keys = new Set<string>();
  for (let i = 0; i < nodes.length; i++) {
    const node = nodes[i]!;
    if (node.key !== null) {
      if (keys.has(node.key)) return null;
      keys.add(node.key);
    }
    // At most one IPv4 value of each (ByFamily), so two slots per node suffice; IPv6 ones go apart.
    for (let k = 0; k < node.podCIDRs.length; k++) add(node.podCIDRs[k]!);
    // The internal IP's own address (its host prefix), as resolveInOrder claims it.
    for (let k = 0; k < node.internalIPs.length; k++) {
      const internal = node.internalIPs[k]!;
      if (internal.family !== 4) six.push(internal.ip.toHostCidr());
      else prefixes[n++] = (internal.ip.v4 >>> 0) * 64 + 32;
    }
  }
  for (let i = 0; i < peers.length; i++) {
    const peer = peers[i]!;
    if (keys.has(peer.publicKey)) return null;
    keys.add(peer.publicKey);
    for (let j = 0; j < peer.allowedIPs.length; j++) {
      add(peer.allowedIPs[j]!);
    }
  }
  const sorted = prefixes.subarray(0, n).sort();
  // Aligned prefixes overlap only when one contains the other: in this order, when one starts
  // before the end of the one before it.
  let end = 0;
  for (let i = 0; i < sorted.length; i++) {
    const key = sorted[i]!;
    const prefix = key % 64;
    const start = (key - prefix) / 64;
    if (start < end) return null;
    end = start + size4[prefix]!;
  }
  if (six.length > 0 && !ipv6Disjoint(six)) return null;
  return { nodes: inNameOrder(nodes).slice(), peers: inNameOrder(peers).slice(), conflicts: [] };
}

/**
 * Whether no two IPv6 prefixes overlap. Aligned prefixes overlap only by containment, and sorted by
 * network then length, a prefix inside another comes right after it or after one that is inside it
 * too: neighbours tell. Keyed as aggregate6.ts keys them: one short string per prefix, sorted
 * natively (docs/performance.md#dual-stack).
 */
function ipv6Disjoint(prefixes: readonly Cidr[]): boolean {
  const keys = new Array<string>(prefixes.length);
  for (let i = 0; i < prefixes.length; i++) keys[i] = key6(prefixes[i]!);
  keys.sort();
  for (let i = 1; i < keys.length; i++) {
    const before = keys[i - 1]!;
    if (sameBits(before, keys[i]!, before.charCodeAt(8))) return false;
  }
  return true;
}

/**
 * Claims the addresses a node holds in the mesh (routed to it, so nobody else may claim them), or
 * drops the node, naming the first address already held, and claims none.
 */
function claimNode(n: KiloNode, claims: PrefixClaims<Holder>, conflicts: ValidationError[]): boolean {
  const pods = n.podCIDRs;
  const podField = pods.length > 1 ? 'spec.podCIDRs' : 'spec.podCIDR';
  for (let k = 0; k < n.internalIPs.length; k++) {
    const internal = n.internalIPs[k]!.ip.toHostCidr();
    for (let j = 0; j < pods.length; j++) {
      // The same address would be a pod and the host: two routes and allowed IPs for one destination.
      if (!pods[j]!.overlaps(internal)) continue;
      dropNode(conflicts, n, internalIPField, internal.networkText, `its own pod CIDR ${pods[j]!.networkText}`);
      return false;
    }
  }
  for (let j = 0; j < pods.length; j++) {
    const holder = claims.find(pods[j]!);
    if (holder === null) continue;
    dropNode(conflicts, n, podField, pods[j]!.networkText, holder);
    return false;
  }
  for (let k = 0; k < n.internalIPs.length; k++) {
    const internal = n.internalIPs[k]!.ip.toHostCidr();
    const holder = claims.find(internal);
    if (holder === null) continue;
    dropNode(conflicts, n, internalIPField, internal.networkText, holder);
    return false;
  }
  for (let j = 0; j < pods.length; j++) claims.claim(pods[j]!, n);
  for (let k = 0; k < n.internalIPs.length; k++) claims.claim(n.internalIPs[k]!.ip.toHostCidr(), n);
  return true;
}

/** resolveConflicts claim by claim, in the documented order: what it answers whatever the input. */
export function resolveInOrder(
  nodes: readonly KiloNode[],
  peers: readonly KiloPeer[],
  subnet: Cidr | ByFamily<Cidr>,
): Resolved {
  const conflicts: ValidationError[] = [];
  const claims = new PrefixClaims<Holder>();
  for (const s of Array.isArray(subnet) ? (subnet as ByFamily<Cidr>) : [subnet as Cidr])
    claims.claim(s, `the WireGuard subnet ${s.networkText} (--subnet)`);
  const keys = new Map<string, Holder>();

  const keptNodes: KiloNode[] = [];
  const ordered = inNameOrder(nodes);
  // Index loops here and in find: cold code over thousands of nodes (docs/performance.md#cold-code).
  for (let i = 0; i < ordered.length; i++) {
    const n = ordered[i]!;
    const keyHolder = n.key ? keys.get(n.key) : undefined;
    if (keyHolder !== undefined) {
      dropNode(conflicts, n, keyField, n.key!, keyHolder);
      continue;
    }
    if (!claimNode(n, claims, conflicts)) continue;
    if (n.key) keys.set(n.key, n);
    keptNodes.push(n);
  }

  const keptPeers: KiloPeer[] = [];
  // Peers' prefixes may nest (WireGuard routes the longest match); only the same prefix twice clashes.
  const peerIPs = new Map<string, Holder>();
  for (const p of inNameOrder(peers)) {
    const object = named(p);
    const keyHolder = keys.get(p.publicKey);
    if (keyHolder !== undefined) {
      conflicts.push(new ValidationError(object, 'spec.publicKey', p.publicKey, `already held by ${named(keyHolder)}`));
      continue;
    }
    const allowedIPs: Cidr[] = [];
    const own = new Set<string>();
    for (const [i, c] of p.allowedIPs.entries()) {
      if (own.has(c.networkText)) continue; // the same prefix twice in one Peer is one claim
      const holder = claims.find(c) ?? peerIPs.get(c.networkText) ?? null;
      if (holder !== null) {
        conflicts.push(
          new ValidationError(object, `spec.allowedIPs[${i}]`, c.networkText, `already held by ${named(holder)}`),
        );
        continue;
      }
      own.add(c.networkText);
      allowedIPs.push(c);
    }
    // A Peer left without allowed IPs stays a WireGuard peer with none, as the contract's vectors
    // (and Kilo) have it: it routes nothing, so it breaks no invariant.
    for (const c of allowedIPs) peerIPs.set(c.networkText, p);
    keys.set(p.publicKey, p);
    keptPeers.push(allowedIPs.length === p.allowedIPs.length ? p : { ...p, allowedIPs });
  }
  return { nodes: keptNodes, peers: keptPeers, conflicts };
}
