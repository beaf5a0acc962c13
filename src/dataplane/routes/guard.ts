import type { PlanGuardRoute } from '../../mesh/types.js';
import type { Family } from '../../net/cidr.js';
import { AddressMemo } from '../../net/memo.js';
import { mainTableId } from './constants.js';
import { canonicalPrefix4, defaultMetric, routeKey, type DesiredState, type KernelRoute } from './state.js';

/**
 * The fail-closed guard in kernel form (docs/fail-closed.md): a `blackhole` route per guarded
 * destination, with Kilo's protocol, one metric behind Kilo's own route to it.
 *
 * One metric behind: the route through kilo wins while it exists; once the kernel removes it (the
 * interface is gone), the guard is the best route to that prefix, ahead of any other route of the
 * same prefix at a default or later metric (a default route is less specific anyway).
 *
 * blackhole rather than unreachable or prohibit: the guard mostly covers short gaps (wireguard-go
 * restarted, kilo0 created again), and a pod's TCP retransmits over a silent drop, where an ICMP
 * error would fail its connect() at once. A sender on the node itself gets EINVAL; `ip route show
 * proto 107 type blackhole` lists the guard.
 */
export const guardRouteType = 'blackhole';

/** The guard's metric in a family: right after the kernel's default, which Kilo's routes have. */
export function guardMetric(family: Family): number {
  return defaultMetric(family) + 1;
}

/**
 * The guard route of a prefix already canonical. Linux gives an IPv6 route of a drop type the
 * loopback device (and prints it); an IPv4 one has none.
 */
export function guardRoute(family: Family, dst: string, table: number, protocol: number): KernelRoute {
  return {
    family,
    dst,
    table,
    metric: guardMetric(family),
    gw: null,
    dev: family === 6 ? 'lo' : null,
    src: null,
    onlink: false,
    type: guardRouteType,
    protocol,
  };
}

/** The guard as the kernel would print it if every text in the plan is canonical (the reconciler's guess). */
export function guardAsKernel(guard: readonly PlanGuardRoute[], protocol: number): KernelRoute[] {
  return guard.map((g) =>
    guardRoute(g.dst.includes(':') ? 6 : 4, g.dst, g.table === 'main' ? mainTableId : g.table, protocol),
  );
}

/** Adds the guard's routes to a desired state; a destination that is not a CIDR is a problem, named. */
export function addGuard(
  out: DesiredState,
  guard: readonly PlanGuardRoute[],
  protocol: number,
  memo: AddressMemo = new AddressMemo(),
): void {
  for (const g of guard) {
    const table = g.table === 'main' ? mainTableId : g.table;
    const dst = canonicalPrefix4(g.dst) ?? memo.prefix(g.dst);
    if (!dst) {
      const object = `route ${guardRouteType} ${g.dst}${g.table === 'main' ? '' : ` table ${g.table}`}`;
      out.problems.push({ object, message: `dst ${JSON.stringify(g.dst)} is not a CIDR` });
      continue;
    }
    const route = guardRoute(dst.family, dst.networkText, table, protocol);
    const key = routeKey(route);
    if (out.byKey.has(key)) continue;
    out.byKey.set(key, route);
    out.routes.push(route);
  }
}
