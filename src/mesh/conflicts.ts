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

/** A prefix cut to its first `length` bits: a number for IPv4 (no strings to build), bits as text for IPv6. */
type Key = number | string;

const bits = Array.from({ length: 256 }, (_, b) => b.toString(2).padStart(8, '0'));

/** The network address in a form `keyAt` cuts cheaply. */
function addressOf(c: Cidr): number | string {
  const b = c.network.bytes;
  if (c.family === 4) return ((b[0]! << 24) | (b[1]! << 16) | (b[2]! << 8) | b[3]!) >>> 0;
  let s = '';
  for (const x of b) s += bits[x]!;
  return s;
}

function keyAt(address: number | string, length: number): Key {
  if (typeof address === 'string') return address.slice(0, length);
  return length === 0 ? 0 : address >>> (32 - length);
}

/** The claims of one family: each claimed prefix under its length, and per queried length what lies inside. */
interface FamilyClaims {
  /** Prefix length → key → owner. */
  exact: Map<number, Map<Key, string>>;
  /** Query length → key (of length) → the first owner of a longer prefix inside it; built on the first query. */
  inside: Map<number, Map<Key, string>>;
  claims: { address: number | string; length: number; owner: string }[];
}

/**
 * Prefixes claimed so far, with their owners. `find` answers "does this prefix overlap a claimed
 * one" without a scan: two prefixes overlap exactly when one contains the other, so it looks the
 * prefix's ancestors up among the claims (one look-up per claimed length) and the prefix itself
 * among the claims cut to its length. Claims are cut to a length only once some query has it (a
 * cluster's queries come in two or three lengths), so a claim costs a few map entries, not one per bit.
 */
export class PrefixClaims {
  private readonly families = new Map<4 | 6, FamilyClaims>();

  private family(c: Cidr): FamilyClaims {
    let f = this.families.get(c.family);
    if (!f) this.families.set(c.family, (f = { exact: new Map(), inside: new Map(), claims: [] }));
    return f;
  }

  find(c: Cidr): string | null {
    const f = this.families.get(c.family);
    if (!f) return null;
    const address = addressOf(c);
    let best: { length: number; owner: string } | null = null;
    for (const [length, owners] of f.exact) {
      if (length > c.prefix || (best && best.length < length)) continue;
      const owner = owners.get(keyAt(address, length));
      if (owner !== undefined) best = { length, owner };
    }
    if (best) return best.owner;
    let inside = f.inside.get(c.prefix);
    if (!inside) {
      f.inside.set(c.prefix, (inside = new Map<Key, string>()));
      for (const claim of f.claims) addInside(inside, c.prefix, claim.address, claim.length, claim.owner);
    }
    return inside.get(keyAt(address, c.prefix)) ?? null;
  }

  claim(c: Cidr, owner: string): void {
    const f = this.family(c);
    const address = addressOf(c);
    let owners = f.exact.get(c.prefix);
    if (!owners) f.exact.set(c.prefix, (owners = new Map<Key, string>()));
    const key = keyAt(address, c.prefix);
    if (!owners.has(key)) owners.set(key, owner);
    f.claims.push({ address, length: c.prefix, owner });
    for (const [length, inside] of f.inside) addInside(inside, length, address, c.prefix, owner);
  }
}

/** Records a claim under its ancestor of `length`, when it is strictly longer; the first owner stays. */
function addInside(inside: Map<Key, string>, length: number, address: number | string, claimed: number, owner: string) {
  if (claimed <= length) return;
  const key = keyAt(address, length);
  if (!inside.has(key)) inside.set(key, owner);
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
