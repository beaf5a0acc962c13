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

/** The prefix as a string of its bits, so that "is a prefix of" is `startsWith` and ancestors are slices. */
function bitKey(c: Cidr): string {
  let s = '';
  for (const b of c.network.bytes) s += bits[b]!;
  return `${c.family}:${s.slice(0, c.prefix)}`;
}

/**
 * Prefixes claimed so far, with their owners. `find` answers "does this prefix overlap a claimed
 * one" in time proportional to the prefix length, not the number of claims: two prefixes overlap
 * exactly when one contains the other, so it looks up the prefix's ancestors among the claims and
 * the prefix itself among the claims' ancestors.
 */
export class PrefixClaims {
  private readonly exact = new Map<string, string>();
  private readonly inside = new Map<string, string>();

  find(c: Cidr): string | null {
    const k = bitKey(c);
    const head = k.indexOf(':') + 1;
    for (let i = head; i <= k.length; i++) {
      const owner = this.exact.get(k.slice(0, i));
      if (owner !== undefined) return owner;
    }
    return this.inside.get(k) ?? null;
  }

  claim(c: Cidr, owner: string): void {
    const k = bitKey(c);
    if (!this.exact.has(k)) this.exact.set(k, owner);
    const head = k.indexOf(':') + 1;
    for (let i = head; i < k.length; i++) {
      const a = k.slice(0, i);
      if (!this.inside.has(a)) this.inside.set(a, owner);
    }
  }
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
