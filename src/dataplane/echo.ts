import { describeLinkOp, type DesiredLink, type LinkOp } from './links.js';
import type { RoutingEvent } from './monitor-line.js';
import { kiloRouteProtocol } from './routes/constants.js';
import type { KernelRoute } from './routes/state.js';

/**
 * The echo of the agent's own writes in the routing monitor's events: what DataplaneMemory
 * (cache.ts) needs to tell them from someone else's changes. Routes are judged against the routes it
 * remembers (`accounts`); an interface's events against what its last write did (`echoesLinkWrite`).
 */

/** What the last write of an interface did: the state it left and the lines it ran (`Ops.details`). */
export interface LinkWrite {
  state: DesiredLink;
  did: readonly string[];
}

type RouteEvent = Extract<RoutingEvent, { kind: 'route' }>;
export type InterfaceEvent = Extract<RoutingEvent, { kind: 'link' | 'address' }>;

/** The route a route event reports, in routes/state.ts's form (the monitor reports only Kilo's protocol). */
export function routeOfEvent(e: RouteEvent): KernelRoute {
  return {
    family: e.family,
    dst: e.dst,
    table: e.table,
    metric: e.metric,
    gw: e.gateway,
    dev: e.dev,
    src: e.src,
    onlink: e.onlink,
    type: e.type,
    protocol: kiloRouteProtocol,
  };
}

/**
 * Whether an interface event only reports what `write`, the last write of that interface, did: an
 * address it added, or the link up at the MTU it left, after it brought the link up or set its MTU.
 * Nothing that can drop routes silently is ever an echo (an address removed, the link down or
 * deleted: the kernel flushes the routes through it without a word), nor anything on an interface
 * the last write did not touch, nor a state other than the one it left. A late echo is judged
 * against the interface's last write at the time: after a later write it is not that write's, and
 * starts a full read.
 */
export function echoesLinkWrite(write: LinkWrite | undefined, e: InterfaceEvent): boolean {
  if (!write || e.deleted) return false;
  const did = (op: LinkOp) => write.did.includes(describeLinkOp(e.name, op));
  if (e.kind === 'address') return did({ kind: 'address', action: 'add', address: e.cidr });
  const { up, mtu } = write.state;
  // With the MTU left alone (null) the event's MTU cannot be told from someone else's.
  if (!e.up || !up || mtu === null || e.mtu !== mtu) return false;
  return did({ kind: 'up' }) || did({ kind: 'mtu', mtu });
}
