import { Cidr, IP } from '../../net/cidr.js';
import {
  canonicalAddress,
  checkDesired,
  describeLinkOp,
  diffLink,
  opsOrThrow,
  type DesiredLink,
  type LinkState,
} from '../links.js';
import type { DiffAgainst, Links, Ops } from '../types.js';
import type { BatchFailure, BatchResult } from './batch.js';
import { mainTableId } from './constants.js';
import { ruleAddConflicts, ruleDeleteMatches, type RouteOp } from './diff.js';
import { throughNexthop } from './nexthops.js';
import { KiloRoutingTables, type KiloRouting, type RouteKernel, type RoutingRead } from './reconciler.js';
import { defaultOwnership, routeKey, sameRoute, type KernelRoute, type KernelRule, type Ownership } from './state.js';

/** Route types that drop what they match, which the model holds (see FakeKernel.checkDrop). */
const dropTypes = new Set(['blackhole', 'unreachable', 'prohibit', 'throw']);

/** An operation the modelled kernel refused, with the kernel's message. */
export class FakeKernelError extends Error {
  override name = 'FakeKernelError';
}

const fail = (message: string): never => {
  throw new FakeKernelError(message);
};

/** Runs `f` now; a throw becomes a rejection, as from the real, asynchronous implementations. */
export function settle<T>(f: () => T): Promise<T> {
  return new Promise<T>((resolve) => resolve(f()));
}

/**
 * An in-memory kernel: interfaces with addresses, every route (Kilo's and foreign, any protocol,
 * any table) and every rule in kernel order. It refuses what the Linux kernel refuses (missing device,
 * unreachable gateway, non-local source, duplicate key) with the kernel's messages, and takes routes
 * away when the kernel does (checked in a namespace, Linux 6.18; the links contract pins it):
 * - an interface down or away: every route through it, both families, any table or protocol; its
 *   IPv6 addresses go too (keep_addr_on_down 0), its IPv4 ones stay;
 * - an interface's last IPv4 address taken away: every plain IPv4 route through it (those via an
 *   IPv6 gateway too), not one through a next-hop object (by `nhid`, which stays with its next hop,
 *   see below); one of several taken away, or its IPv6 addresses, drops none, gateways no longer
 *   on a connected network or not;
 * - an IPv4 address no interface holds any more: the routes of the main table with it as source
 *   (other tables keep theirs); an IPv6 one: every IPv6 route keeps going, without that source.
 * Rules stay in every case, and so do routes that drop (no next hop: the fail-closed guard's). Not modelled: secondary addresses (one of a subnet deleted with its
 * primary when promote_secondaries is 0), the IPv6 routes of an MTU below 1280.
 *
 * Next-hop objects as IprouteRoutes writes them (nexthops.ts: an IPv4 route with a gateway, through
 * one object per gateway, device and onlink flag): a route written with `nexthop` sits on one, made
 * with the checks of a plain route (Linux refuses the object where it refuses the route, and the
 * route is then written plain, with the plain route's error) and shared by every later route
 * through the same gateway, which the gateway's checks no longer meet (the object stands). The
 * object goes with its interface (down or away, its routes with it), never with an address; one no
 * route uses is deleted after a write with no failure, as IprouteRoutes deletes it.
 */
export class FakeKernel {
  readonly links = new Map<string, LinkState>();
  /** By key (table, destination, metric), in insertion order; several under a key are appended routes. */
  private readonly byKey = new Map<string, KernelRoute[]>();
  rules: KernelRule[] = [
    { family: 4, priority: 0, src: null, dst: null, iif: null, fwmark: null, invert: false, table: 255 },
    { family: 4, priority: 32766, src: null, dst: null, iif: null, fwmark: null, invert: false, table: mainTableId },
    { family: 4, priority: 32767, src: null, dst: null, iif: null, fwmark: null, invert: false, table: 253 },
    { family: 6, priority: 0, src: null, dst: null, iif: null, fwmark: null, invert: false, table: 255 },
    { family: 6, priority: 32766, src: null, dst: null, iif: null, fwmark: null, invert: false, table: mainTableId },
  ];
  /** Write operations that reached the model (tests count them). */
  writes = 0;
  /** The next-hop objects, by gateway, device and onlink flag (nexthopKey), with their device. */
  private readonly nexthops = new Map<string, string>();
  /** The routes held through a next-hop object (the objects byKey holds). */
  private readonly onNexthop = new WeakSet<KernelRoute>();

  addLink(name: string, spec: Partial<LinkState> = {}): void {
    if (this.links.has(name)) fail(`RTNETLINK answers: File exists (${name})`);
    this.links.set(name, {
      up: spec.up ?? true,
      mtu: spec.mtu ?? 1500,
      addresses: (spec.addresses ?? []).map(canonicalAddress),
    });
  }

  deleteLink(name: string): void {
    this.link(name);
    this.links.delete(name);
    this.dropRoutes((r) => r.dev === name);
    this.dropNexthops(name);
  }

  link(name: string): LinkState {
    return this.links.get(name) ?? fail(`Cannot find device "${name}"`);
  }

  setUp(name: string, up: boolean): void {
    const l = this.link(name);
    if (l.up && !up) {
      this.dropRoutes((r) => r.dev === name);
      this.dropNexthops(name);
      l.addresses = l.addresses.filter((a) => this.cidr(a).family === 4);
    }
    l.up = up;
    this.writes++;
  }

  setMTU(name: string, mtu: number): void {
    this.link(name).mtu = mtu;
    this.writes++;
  }

  addAddress(name: string, address: string): void {
    const l = this.link(name);
    const a = canonicalAddress(address);
    if (l.addresses.includes(a)) fail('File exists');
    l.addresses.push(a);
    this.writes++;
  }

  delAddress(name: string, address: string): void {
    const l = this.link(name);
    const a = canonicalAddress(address);
    const i = l.addresses.indexOf(a);
    if (i < 0) fail('Cannot assign requested address');
    l.addresses.splice(i, 1);
    this.writes++;
    const { ip } = this.cidr(a);
    if (ip.family === 4 && !l.addresses.some((x) => this.cidr(x).family === 4))
      this.dropRoutes((r) => r.family === 4 && r.dev === name && !this.onNexthop.has(r));
    if (this.isLocal(ip)) return;
    const from = (r: KernelRoute) => r.src !== null && r.family === ip.family && IP.parse(r.src).equals(ip);
    if (ip.family === 4) this.dropRoutes((r) => from(r) && r.table === mainTableId);
    else for (const r of this.routes) if (from(r)) r.src = null;
  }

  /** Whether `r` (one of `routes`) is held through a next-hop object. */
  throughNexthop(r: KernelRoute): boolean {
    return this.onNexthop.has(r);
  }

  /** The next-hop objects, as `gateway device[ onlink]`. */
  get nexthopObjects(): string[] {
    return [...this.nexthops.keys()];
  }

  private dropNexthops(dev: string): void {
    for (const [k, d] of this.nexthops) if (d === dev) this.nexthops.delete(k);
  }

  /** Deletes the next-hop objects no route uses (IprouteRoutes does after a write with no failure). */
  dropUnusedNexthops(): void {
    if (this.nexthops.size === 0) return;
    const used = new Set<string>();
    for (const r of this.routes) if (this.onNexthop.has(r)) used.add(nexthopKey(r));
    for (const k of this.nexthops.keys()) if (!used.has(k)) this.nexthops.delete(k);
  }

  /** Every route, any protocol, any table. */
  get routes(): KernelRoute[] {
    return [...this.byKey.values()].flat();
  }

  private dropRoutes(drop: (r: KernelRoute) => boolean): void {
    for (const [k, list] of this.byKey) {
      const kept = list.filter((r) => !drop(r));
      if (kept.length === 0) this.byKey.delete(k);
      else this.byKey.set(k, kept);
    }
  }

  private readonly parsed = new Map<string, Cidr>();

  private cidr(address: string): Cidr {
    let c = this.parsed.get(address);
    if (!c) this.parsed.set(address, (c = Cidr.parse(address)));
    return c;
  }

  private isLocal(ip: IP): boolean {
    for (const l of this.links.values()) if (l.addresses.some((a) => this.cidr(a).ip.equals(ip))) return true;
    return false;
  }

  /** The interface whose connected prefix holds `ip` (only up interfaces have connected routes). */
  private connectedDevice(ip: IP): string | null {
    for (const [name, l] of this.links) {
      if (l.up && l.addresses.some((a) => this.cidr(a).contains(ip))) return name;
    }
    return null;
  }

  private check(r: KernelRoute): void {
    if (r.type !== 'unicast') return this.checkDrop(r);
    if (r.dev === null) fail('multipath routes are not modelled');
    const link = this.link(r.dev!);
    if (r.src !== null && !this.isLocal(IP.parse(r.src)))
      fail(r.family === 4 ? 'Invalid prefsrc address' : 'Invalid source address');
    if (r.gw === null) {
      if (!link.up) fail(r.family === 4 ? 'Device for nexthop is not up' : 'Nexthop device is not up');
      return;
    }
    const gw = IP.parse(r.gw);
    // An IPv4 route takes an IPv6 next hop (RTA_VIA), never the reverse; the next hop is then checked
    // by the rules of its own family.
    if (r.family === 6 && gw.family === 4) fail('IPv6 does not support RTA_VIA attribute');
    if (r.onlink) {
      if (!link.up) fail('Nexthop device is not up');
      const other = this.connectedDevice(gw);
      if (gw.family === 6 && other !== null && other !== r.dev) fail('Nexthop has invalid gateway or device mismatch');
      return;
    }
    if (this.connectedDevice(gw) !== r.dev)
      fail(r.family === 6 && !link.up ? 'Nexthop device is not up' : 'Nexthop has invalid gateway');
  }

  /**
   * A route that drops (the fail-closed guard's blackhole; unreachable, prohibit, throw): no next hop.
   * IPv4 refuses a gateway or device for one; IPv6 takes a device and holds (and prints) the
   * loopback instead, whatever was given. So neither goes with an interface that goes away.
   */
  private checkDrop(r: KernelRoute): void {
    if (!dropTypes.has(r.type)) fail(`routes of type ${r.type} are not modelled`);
    if (r.family === 4 && (r.gw !== null || r.dev !== null))
      fail('Gateway, device and multipath can not be specified for this route type');
    if (r.gw !== null) fail('IPv6 gateways are not modelled for this route type');
  }

  /** The route as the kernel holds it (see checkDrop). */
  private held(r: KernelRoute): KernelRoute {
    return r.type !== 'unicast' && r.family === 6 ? { ...r, dev: 'lo' } : { ...r };
  }

  /**
   * Checks `r` as the kernel would and makes what holds it: through a next-hop object when asked
   * (`nexthop`) and `r` is a route IprouteRoutes writes so, the object made if there is none.
   */
  private admit(r: KernelRoute, nexthop: boolean): KernelRoute {
    const hop = nexthop && throughNexthop(r) ? nexthopKey(r) : null;
    if (hop !== null && this.nexthops.has(hop)) {
      // Through a standing object: only the route's own attributes are checked.
      if (r.src !== null && !this.isLocal(IP.parse(r.src))) fail('Invalid prefsrc address');
    } else this.check(r);
    const held = this.held(r);
    if (hop !== null) {
      this.nexthops.set(hop, r.dev!);
      this.onNexthop.add(held);
    }
    return held;
  }

  routeAdd(r: KernelRoute, nexthop = false): void {
    const k = routeKey(r);
    const held = this.admit(r, nexthop);
    if (this.byKey.has(k)) fail('File exists');
    this.byKey.set(k, [held]);
    this.writes++;
  }

  /** Like the kernel, replaces whatever route holds the key, whoever installed it. */
  routeReplace(r: KernelRoute, nexthop = false): void {
    const held = this.admit(r, nexthop);
    const list = this.byKey.get(routeKey(r));
    if (list) list[0] = held;
    else this.byKey.set(routeKey(r), [held]);
    this.writes++;
  }

  /** Deletes the first route with the spec's key and protocol. */
  routeDel(spec: KernelRoute): void {
    const k = routeKey(spec);
    const list = this.byKey.get(k) ?? [];
    const i = list.findIndex((x) => x.protocol === spec.protocol);
    if (i < 0) fail('No such process');
    list.splice(i, 1);
    if (list.length === 0) this.byKey.delete(k);
    this.writes++;
  }

  /** Inserts after the rules of the same or lower priority, as the kernel does. */
  ruleAdd(r: KernelRule): void {
    if (this.rules.some((x) => ruleAddConflicts(r, x))) fail('File exists');
    let at = this.rules.findIndex((x) => x.priority > r.priority);
    if (at < 0) at = this.rules.length;
    this.rules.splice(at, 0, { ...r });
    this.writes++;
  }

  /** Deletes the first rule the spec's selectors match (the kernel's loose matching). */
  ruleDel(spec: KernelRule): void {
    const i = this.rules.findIndex((x) => ruleDeleteMatches(spec, x));
    if (i < 0) fail('No such file or directory');
    this.rules.splice(i, 1);
    this.writes++;
  }
}

/** A next-hop object's identity: gateway, device and onlink flag, as nexthops.ts keys them. */
function nexthopKey(r: KernelRoute): string {
  return `${r.gw} ${r.dev}${r.onlink ? ' onlink' : ''}`;
}

/**
 * RouteKernel over a FakeKernel: applies each change on its own, as `ip -force -batch` does; the
 * IPv4 routes with a gateway through next-hop objects, as IprouteRoutes (`nexthops` false: plain,
 * as on a kernel without them).
 */
export class FakeRoutes implements RouteKernel {
  constructor(
    readonly kernel: FakeKernel,
    private readonly nexthops = true,
  ) {}

  read(owner: Ownership): Promise<RoutingRead> {
    return settle(() => {
      const read = this.now(owner);
      const parse = (expected?: ReadonlyMap<string, KernelRoute>): KiloRouting => {
        if (!expected) return read;
        // As the kernel's reader: a route equal to one expected is that object.
        const as = (r: KernelRoute) => {
          const want = expected.get(routeKey(r));
          return want && want.family === r.family && sameRoute(want, r) ? want : r;
        };
        return { routes: read.routes.map(as), rules: read.rules };
      };
      return { empty: read.routes.length === 0 && read.rules.length === 0, parse };
    });
  }

  private now(owner: Ownership): KiloRouting {
    return {
      routes: this.kernel.routes.filter((r) => r.protocol === owner.protocol).map((r) => ({ ...r })),
      rules: this.kernel.rules.filter((r) => r.priority === owner.priority).map((r) => ({ ...r })),
    };
  }

  async apply(ops: readonly RouteOp[], after?: Promise<unknown>): Promise<BatchResult> {
    await after;
    return settle(() => this.applyNow(ops));
  }

  private applyNow(ops: readonly RouteOp[]): BatchResult {
    const failures: BatchFailure[] = [];
    ops.forEach((op, index) => {
      try {
        if (op.kind === 'route') {
          if (op.action === 'add') this.kernel.routeAdd(op.route, this.nexthops);
          else if (op.action === 'replace') this.kernel.routeReplace(op.route, this.nexthops);
          else this.kernel.routeDel(op.route);
        } else if (op.action === 'add') this.kernel.ruleAdd(op.rule);
        else this.kernel.ruleDel(op.rule);
      } catch (e) {
        if (!(e instanceof FakeKernelError)) throw e;
        failures.push({ index, message: e.message });
      }
    });
    if (failures.length === 0) this.kernel.dropUnusedNexthops();
    return { failures };
  }
}

export function fakeRoutingTables(kernel: FakeKernel, owner: Ownership = defaultOwnership): KiloRoutingTables {
  return new KiloRoutingTables(new FakeRoutes(kernel), owner);
}

/** Links over a FakeKernel, with the same diff as LinuxLinks. */
export class FakeLinks implements Links {
  constructor(readonly kernel: FakeKernel) {}

  read(device: string): Promise<LinkState> {
    return settle(() => {
      const l = this.kernel.links.get(device);
      if (!l) throw new Error(`interface ${device} does not exist`);
      return { up: l.up, mtu: l.mtu, addresses: [...l.addresses] };
    });
  }

  async reconcile(device: string, state: DesiredLink, options: DiffAgainst<LinkState> = {}): Promise<Ops> {
    checkDesired(device, state);
    const ops = diffLink(options.current ?? (await this.read(device)), state);
    const failures: BatchFailure[] = [];
    ops.forEach((op, index) => {
      try {
        if (op.kind === 'address') {
          if (op.action === 'add') this.kernel.addAddress(device, op.address);
          else this.kernel.delAddress(device, op.address);
        } else if (op.kind === 'mtu') this.kernel.setMTU(device, op.mtu);
        else this.kernel.setUp(device, op.kind === 'up');
      } catch (e) {
        if (!(e instanceof FakeKernelError)) throw e;
        failures.push({ index, message: e.message });
      }
    });
    return opsOrThrow(
      ops.map((op) => describeLinkOp(device, op)),
      failures,
    );
  }
}
