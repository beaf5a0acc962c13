import type { Family } from '../net/cidr.js';
import type { Endpoint, KiloNode } from '../model/types.js';

/** Who dials: a node, or a Peer (one endpoint, or none for a roaming one). */
export type Dialler = Pick<KiloNode, 'endpoint' | 'ipv6Endpoint'>;

/**
 * Which of a node's endpoints a peer dials (docs/dual-stack.md#which-endpoint). A node has at most
 * one endpoint per family: Kilo's annotation (IPv4 on a dual-stack node, so that Kilo agents reach
 * it) and the IPv6 one beside it. The rule: the target's first endpoint, Kilo's first, of a family
 * the dialling node announces an endpoint of too (a DNS name, or no endpoint at all, counts as
 * every family). A node announcing an endpoint of a family is on an underlay of that family, so
 * both ends can use the one chosen, and both ends choose the same: two dual-stack nodes take IPv4
 * (as Kilo agents do), a dual-stack node and an IPv6-only one IPv6. Two nodes sharing no family
 * (IPv4-only and IPv6-only) cannot meet directly: Kilo's endpoint, as before.
 */
export function endpointFor(local: Dialler, target: KiloNode): Endpoint | null {
  const six = target.ipv6Endpoint;
  // One endpoint, nothing to choose: every one-family cluster.
  if (!six) return target.endpoint;
  const kilo = target.endpoint;
  if (kilo && (!kilo.ip || reaches(local, kilo.ip.family))) return kilo;
  if (reaches(local, 6)) return six;
  return kilo ?? six;
}

/** The node announces an endpoint of `family`, or one that is no address (a DNS name, none). */
function reaches(n: Dialler, family: Family): boolean {
  const kilo = n.endpoint;
  if (!kilo?.ip) return true;
  return kilo.ip.family === family || (family === 6 && n.ipv6Endpoint !== undefined);
}
