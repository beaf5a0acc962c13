import type { Cidr } from '../net/cidr.js';
import type { MeshOptions } from '../mesh/options.js';
import type { Granularity, KiloNode } from '../model/types.js';

/** What decides whether location mates are routed to on-link, in the clear (the only case a LAN decides). */
export type LanMesh = Pick<MeshOptions, 'granularity' | 'encapsulate' | 'local' | 'compatibility'>;

/**
 * A location whose mates are not on one LAN: the mesh plans them to reach each other in the clear
 * (a route via the mate's internal IP, on-link), which cannot work when neither is on the other's
 * network. Computed from published data alone (internal IPs with their prefix lengths), so the
 * agent, kgctl and the lab say the same thing. Pure.
 */
export interface LanMistake {
  /** The node on the location's less common network: the one most likely put in the wrong location. */
  node: string;
  /** The mate it cannot reach in the clear. */
  mate: string;
  location: string;
  /** node's internal IP, as published (with its prefix length). */
  internalIP: string;
  /** mate's network. */
  network: string;
  reason: string;
}

/** Granularities that place nodes of one location in one group (reached in the clear). */
const groupedByLocation: ReadonlySet<Granularity> = new Set(['location', 'cross']);

/**
 * Mates are reached by an on-link route via their internal IP only without encapsulation: IPIP
 * (--encapsulate always or crosssubnet) and a CNI's overlay route the outer packet, which crosses
 * routed subnets; --local=false sends them through WireGuard.
 */
function onLink(m: LanMesh): boolean {
  return groupedByLocation.has(m.granularity) && m.encapsulate === 'never' && m.local && !m.compatibility;
}

/** Neither address is on the other's network: the two are on different LANs. */
function apart(a: Cidr, b: Cidr): boolean {
  return !a.contains(b.ip) && !b.contains(a.ip);
}

export function lanReason(node: string, ip: Cidr, mate: string, network: Cidr, location: string): string {
  return `${node}'s internal IP ${ip.toString()} is not on ${mate}'s network ${network.networkText}: same location${location ? ` ${location}` : ''}, different LANs (use subnet granularity, or fix the location)`;
}

/**
 * Every pair of `nodes` (the ready ones) planned to talk in the clear but on different LANs, at
 * most `limit` of them (and how many in all). Nodes are grouped by location and, within it, by
 * network, so the cost is the number of nodes plus the pairs listed, not the square of a
 * location's size. Only `location` and `cross` group by location; `subnet` groups by network
 * already and `full` has no groups; and only mates routed to on-link count (onLink). `only`: just
 * the pairs of that node (the agent's own).
 */
export function lanMistakes(
  nodes: readonly KiloNode[],
  mesh: LanMesh,
  o: { limit?: number; only?: string } = {},
): { mistakes: LanMistake[]; total: number } {
  const limit = o.limit ?? Infinity;
  const out: LanMistake[] = [];
  let total = 0;
  if (!onLink(mesh)) return { mistakes: out, total };
  const only = o.only === undefined ? null : nodes.find((n) => n.name === o.only);
  if (o.only !== undefined && !only) return { mistakes: out, total };
  const byLocation = new Map<string, KiloNode[]>();
  for (const n of nodes) {
    // A node without an internal IP is a group of its own: reached over WireGuard, never in the clear.
    if (n.internalIPs.length === 0 || (only && n.location !== only.location)) continue;
    const list = byLocation.get(n.location);
    if (list) list.push(n);
    else byLocation.set(n.location, [n]);
  }
  for (const [location, members] of [...byLocation].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (members.length < 2) continue;
    for (const family of [4, 6] as const) {
      // Networks of this family, each with its members; most members first (then by network).
      const nets = new Map<string, { net: Cidr; nodes: KiloNode[] }>();
      for (const n of members) {
        const ip = n.internalIPs.find((c) => c.family === family);
        if (!ip) continue;
        const e = nets.get(ip.networkText);
        if (e) e.nodes.push(n);
        else nets.set(ip.networkText, { net: ip, nodes: [n] });
      }
      if (nets.size < 2) continue;
      const ranked = [...nets.values()].sort(
        (a, b) =>
          b.nodes.length - a.nodes.length ||
          (a.net.networkText < b.net.networkText ? -1 : a.net.networkText > b.net.networkText ? 1 : 0),
      );
      for (let i = 0; i < ranked.length; i++)
        for (let j = 0; j < i; j++) {
          const [major, minor] = [ranked[j]!, ranked[i]!];
          if (!apart(major.net, minor.net)) continue;
          const m = sortedNames(minor.nodes);
          const M = sortedNames(major.nodes);
          if (only) {
            // Only the pairs with `only` in them.
            const inMinor = m.some((n) => n.name === only.name);
            const inMajor = M.some((n) => n.name === only.name);
            if (!inMinor && !inMajor) continue;
            const others = inMinor ? M : m;
            total += others.length;
            for (const other of others) {
              if (out.length >= limit) break;
              const [node, mate] = inMinor ? [only, other] : [other, only];
              out.push(mistake(node, mate, family, location));
            }
            continue;
          }
          total += m.length * M.length;
          for (const node of m)
            for (const mate of M) {
              if (out.length >= limit) break;
              out.push(mistake(node, mate, family, location));
            }
        }
    }
  }
  return { mistakes: out, total };
}

function mistake(node: KiloNode, mate: KiloNode, family: 4 | 6, location: string): LanMistake {
  const ip = node.internalIPs.find((c) => c.family === family)!;
  const net = mate.internalIPs.find((c) => c.family === family)!;
  return {
    node: node.name,
    mate: mate.name,
    location,
    internalIP: ip.toString(),
    network: net.networkText,
    reason: lanReason(node.name, ip, mate.name, net, location),
  };
}

function sortedNames(nodes: readonly KiloNode[]): KiloNode[] {
  return [...nodes].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
