import { Cidr } from '../net/cidr.js';
import type { PlanGuardRoute, PlanRoute } from './types.js';

/**
 * The fail-closed guard of a plan (docs/fail-closed.md): every destination the plan sends through
 * the WireGuard interface, in the table it is routed in, and the mesh's WireGuard network the
 * interface's address makes reachable. Pure and family-neutral: it follows the plan's routes, so
 * remote pod CIDRs, remote internal IPs (table 1108 with --route-host-traffic), allowed-location
 * IPs, Peers' allowed IPs and the WireGuard IPs are covered in whichever family the plan has them.
 *
 * Why routes, beside each route through kilo: when the interface goes (wireguard-go killed, kilo0
 * deleted), the kernel removes every route through it and nothing else; the traffic would then
 * follow the next best route, usually the default one out of the uplink, in the clear. A drop
 * route at the same prefix is still there, needs no process and no interface, and stays while kg
 * is dead or stopped without clean-up. A firewall rule would need the same destinations as a set
 * in two backends and an exception for the tunnel's own packets; the routes are the plan's own.
 *
 * `wireGuardAddresses`: the interface's addresses with the mesh mask (a leader's; none otherwise).
 */
export function planGuard(routes: readonly PlanRoute[], wireGuardAddresses: readonly string[]): PlanGuardRoute[] {
  const out: PlanGuardRoute[] = [];
  // A set of destinations per table, not one of "table dst" keys: the plan's texts are hashed once
  // and kept, where a key made per route (40,000 at 20,000 nodes) is a new string to build and hash.
  const seen = new Map<PlanGuardRoute['table'], Set<string>>();
  const add = (dst: string, table: PlanGuardRoute['table']) => {
    let dsts = seen.get(table);
    if (!dsts) seen.set(table, (dsts = new Set()));
    if (dsts.has(dst)) return;
    dsts.add(dst);
    out.push({ dst, table });
  };
  // The interface's connected route (proto kernel) goes with it too: other segments' WireGuard IPs.
  for (const a of wireGuardAddresses) add(Cidr.parse(a).networkText, 'main');
  for (let i = 0; i < routes.length; i++) {
    const r = routes[i]!;
    if (r.dev === 'kilo') add(r.dst, r.table);
  }
  return out;
}
