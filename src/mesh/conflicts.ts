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
import { ValidationError } from '../model/errors.js';
import type { KiloNode, KiloPeer } from '../model/types.js';

export interface Resolved {
  nodes: KiloNode[];
  peers: KiloPeer[];
  /** One per dropped object or allowed IP, naming it, the field, the value and the earlier claimant. */
  conflicts: ValidationError[];
}

const bits = Array.from({ length: 256 }, (_, b) => b.toString(2).padStart(8, '0'));

/**
 * Claimed prefixes of one family by length: the key of a prefix within its length is its masked
 * address (a 32-bit integer for IPv4, which V8 hashes cheaply; the string of its bits for IPv6).
 */
class ByLength<K> {
  private readonly maps: Map<K, string>[] = [];
  /** The lengths that hold any prefix, ascending: a lookup of ancestors tries only these. */
  readonly lengths: number[] = [];

  get(len: number, key: K): string | undefined {
    return this.maps[len]?.get(key);
  }

  has(len: number, key: K): boolean {
    return this.maps[len]?.has(key) ?? false;
  }

  set(len: number, key: K, owner: string): void {
    let m = this.maps[len];
    if (!m) {
      m = this.maps[len] = new Map();
      this.lengths.push(len);
      this.lengths.sort((a, b) => a - b);
    }
    m.set(key, owner);
  }
}

/** The IPv4 address masked to `len` bits, as a signed 32-bit integer (a small integer to V8). */
const mask4 = (v: number, len: number) => (len === 0 ? 0 : v & (-1 << (32 - len)));

/**
 * Prefixes claimed so far, with their owners. `find` answers "does this prefix overlap a claimed
 * one" in time proportional to the prefix length, not the number of claims: two prefixes overlap
 * exactly when one contains the other, so it looks up the prefix's ancestors among the claims and
 * the prefix itself among the claims' ancestors.
 */
export class PrefixClaims {
  private readonly exact4 = new ByLength<number>();
  private readonly inside4 = new ByLength<number>();
  private readonly exact6 = new ByLength<string>();
  private readonly inside6 = new ByLength<string>();

  find(c: Cidr): string | null {
    if (c.family === 4) {
      const v = address4(c);
      for (const len of this.exact4.lengths) {
        if (len > c.prefix) break;
        const owner = this.exact4.get(len, mask4(v, len));
        if (owner !== undefined) return owner;
      }
      return this.inside4.get(c.prefix, mask4(v, c.prefix)) ?? null;
    }
    const k = bitsOf(c);
    for (const len of this.exact6.lengths) {
      if (len > c.prefix) break;
      const owner = this.exact6.get(len, k.slice(0, len));
      if (owner !== undefined) return owner;
    }
    return this.inside6.get(c.prefix, k.slice(0, c.prefix)) ?? null;
  }

  claim(c: Cidr, owner: string): void {
    // A claim marks all its ancestors, so the first one already marked has its own marked too.
    if (c.family === 4) {
      const v = address4(c);
      if (!this.exact4.has(c.prefix, mask4(v, c.prefix))) this.exact4.set(c.prefix, mask4(v, c.prefix), owner);
      for (let len = c.prefix - 1; len >= 0; len--) {
        if (this.inside4.has(len, mask4(v, len))) break;
        this.inside4.set(len, mask4(v, len), owner);
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
}

function address4(c: Cidr): number {
  const b = c.network.bytes;
  return (b[0]! << 24) | (b[1]! << 16) | (b[2]! << 8) | b[3]!;
}

function bitsOf(c: Cidr): string {
  let s = '';
  for (const x of c.network.bytes) s += bits[x]!;
  return s;
}

const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/** The addresses a node holds in the mesh: routed to it, so nobody else may claim them. */
function nodeClaims(n: KiloNode): [string, Cidr][] {
  const out: [string, Cidr][] = [];
  if (n.podCIDR) out.push(['spec.podCIDR', n.podCIDR]);
  if (n.internalIP) out.push(['metadata.annotations["kilo.squat.ai/internal-ip"]', n.internalIP.ip.toHostCidr()]);
  return out;
}

/** Resolves the conflicts among ready nodes and Peers; `subnet` (the WireGuard IPs) is claimed first. */
export function resolveConflicts(nodes: readonly KiloNode[], peers: readonly KiloPeer[], subnet: Cidr): Resolved {
  const conflicts: ValidationError[] = [];
  const claims = new PrefixClaims();
  claims.claim(subnet, `the WireGuard subnet ${subnet.networkText} (--subnet)`);
  const keys = new Map<string, string>();

  const keptNodes: KiloNode[] = [];
  for (const n of [...nodes].sort(byName)) {
    const object = `Node ${JSON.stringify(n.name)}`;
    const drop = (field: string, value: string, holder: string) => {
      conflicts.push(new ValidationError(object, field, value, `already held by ${holder}`));
    };
    const keyHolder = n.key ? keys.get(n.key) : undefined;
    if (keyHolder !== undefined) {
      drop('metadata.annotations["kilo.squat.ai/key"]', n.key!, keyHolder);
      continue;
    }
    const mine = nodeClaims(n);
    const [pod, internal] = [n.podCIDR, n.internalIP?.ip.toHostCidr()];
    if (pod && internal && pod.overlaps(internal)) {
      // The same address would be a pod and the host: two routes and allowed IPs for one destination.
      drop(
        'metadata.annotations["kilo.squat.ai/internal-ip"]',
        internal.networkText,
        `its own pod CIDR ${pod.networkText}`,
      );
      continue;
    }
    const clash = mine.map(([field, c]) => ({ field, c, holder: claims.find(c) })).find((x) => x.holder !== null);
    if (clash) {
      drop(clash.field, clash.c.networkText, clash.holder!);
      continue;
    }
    for (const [, c] of mine) claims.claim(c, object);
    if (n.key) keys.set(n.key, object);
    keptNodes.push(n);
  }

  const keptPeers: KiloPeer[] = [];
  // Peers' prefixes may nest (WireGuard routes the longest match); only the same prefix twice clashes.
  const peerIPs = new Map<string, string>();
  for (const p of [...peers].sort(byName)) {
    const object = `Peer ${JSON.stringify(p.name)}`;
    const keyHolder = keys.get(p.publicKey);
    if (keyHolder !== undefined) {
      conflicts.push(new ValidationError(object, 'spec.publicKey', p.publicKey, `already held by ${keyHolder}`));
      continue;
    }
    const allowedIPs: Cidr[] = [];
    const own = new Set<string>();
    for (const [i, c] of p.allowedIPs.entries()) {
      if (own.has(c.networkText)) continue; // the same prefix twice in one Peer is one claim
      const holder = claims.find(c) ?? peerIPs.get(c.networkText) ?? null;
      if (holder !== null) {
        conflicts.push(
          new ValidationError(object, `spec.allowedIPs[${i}]`, c.networkText, `already held by ${holder}`),
        );
        continue;
      }
      own.add(c.networkText);
      allowedIPs.push(c);
    }
    // A Peer left without allowed IPs stays a WireGuard peer with none, as the contract's vectors
    // (and Kilo) have it: it routes nothing, so it breaks no invariant.
    for (const c of allowedIPs) peerIPs.set(c.networkText, object);
    keys.set(p.publicKey, object);
    keptPeers.push(allowedIPs.length === p.allowedIPs.length ? p : { ...p, allowedIPs });
  }
  return { nodes: keptNodes, peers: keptPeers, conflicts };
}
