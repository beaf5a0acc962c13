import { echoesLinkWrite, routeOfEvent, type LinkWrite } from './echo.js';
import { desiredAddresses, type DesiredLink } from './links.js';
import type { RoutingEvent } from './monitor-line.js';
import { routeKey, sameRoute, type KernelRoute } from './routes/state.js';
import type { DiffAgainst, FirewallWritten, RoutingWritten, WireGuardWritten } from './types.js';

/**
 * Trusting the last write, in one place: what each step of a reconcile left on the machine, for the
 * next reconcile to diff against instead of reading (see docs/dataplane.md, "Reading the machine, or
 * trusting the last write"). The seams know nothing of it: reconcile() hands a step what this
 * remembers as the state to diff against (DiffAgainst.current) and keeps what the step says it
 * wrote. Whoever owns it (the agent) calls forget() when the next pass must read: on its resync
 * timer, when the routing monitor is blind or reports a change that explains() does not account
 * for, after a wireguard-go restart. reconcile() forgets everything after a pass with an error.
 */
export class DataplaneMemory {
  private device: WireGuardWritten | null = null;
  /** The device as this pass read it (a full pass): its configure diffs against that read. */
  private deviceJustRead: WireGuardWritten | null = null;
  private readonly links = new Map<string, LinkWrite>();
  private routes: RoutingWritten | null = null;
  private firewall: FirewallWritten | null = null;

  /** The next reconcile reads every part of the machine. */
  forget(): void {
    this.device = null;
    this.deviceJustRead = null;
    this.links.clear();
    this.routes = null;
    this.firewall = null;
  }

  /**
   * Whether a change the routing monitor reported is the echo of the last write (echo.ts): a route
   * as accounts() says; an interface's address or link as its last write left it. A rule, a change
   * that may have dropped routes and anything else is not: the next pass must read.
   */
  explains(e: RoutingEvent): boolean {
    switch (e.kind) {
      case 'route':
        return this.accounts({ deleted: e.deleted, route: routeOfEvent(e) });
      case 'address':
      case 'link':
        return echoesLinkWrite(this.links.get(e.name), e);
      default:
        return false;
    }
  }

  /**
   * Whether a change the kernel reported to one of Kilo's routes is accounted for by the last
   * write: our own writes are; someone else's are not, and then the routes are forgotten so that the
   * next reconcile reads them. With no routes remembered every change agrees (the next one reads).
   */
  accounts(change: { deleted: boolean; route: KernelRoute }): boolean {
    if (!this.routes) return true;
    const mine = this.routes.byKey.get(routeKey(change.route));
    const same = mine !== undefined && sameRoute(mine, change.route);
    const agrees = change.deleted ? !same : same;
    if (!agrees) this.routes = null;
    return agrees;
  }

  /** Whether the WireGuard interface was ensured and configured by the last pass (ensure may be skipped). */
  get hasDevice(): boolean {
    return this.device !== null;
  }

  /** What a step diffs against (the last write, when remembered) and how it tells what it wrote. */
  forDevice(): DiffAgainst<WireGuardWritten> {
    const current = this.device ?? this.deviceJustRead;
    this.device = null;
    this.deviceJustRead = null;
    return { ...(current ? { current } : {}), wrote: (after) => (this.device = after) };
  }

  forRoutes(): DiffAgainst<RoutingWritten> {
    const current = this.routes;
    this.routes = null;
    return { ...(current ? { current } : {}), wrote: (after) => (this.routes = after) };
  }

  forFirewall(): DiffAgainst<FirewallWritten> {
    const current = this.firewall;
    this.firewall = null;
    return { ...(current ? { current } : {}), wrote: (after) => (this.firewall = after) };
  }

  /** This pass read the device (`dump`): its configure diffs against that read instead of reading again. */
  deviceRead(dump: WireGuardWritten): void {
    this.deviceJustRead = dump;
  }

  /** Whether the last write left `device` as `state` says (then its reconcile has nothing to do). */
  linkHolds(device: string, state: DesiredLink): boolean {
    const last = this.links.get(device)?.state;
    return (
      last !== undefined &&
      last.address === state.address &&
      desiredAddresses(last).join() === desiredAddresses(state).join() &&
      last.up === state.up &&
      last.mtu === state.mtu
    );
  }

  /** `device`'s reconcile (to `state`, running the lines `did`) succeeded, or failed (null). */
  linkWrote(device: string, state: DesiredLink | null, did: readonly string[]): void {
    if (state) this.links.set(device, { state: { ...state }, did: [...did] });
    else this.links.delete(device);
  }
}
