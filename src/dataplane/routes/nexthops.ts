import type { RouteOp } from './diff.js';
import { printedKey, type IpRouteJson } from './iproute.js';
import { routesDigest, type PrintedRoutes, textDigest } from './printed.js';
import { routeKey, type KernelRoute } from './state.js';

/**
 * Kilo's gateway routes through next-hop objects (`ip nexthop`, routes by `nhid`): what the kernel
 * holds, not what the plan says. The plan's route `10.42.2.0/24 via 10.4.0.2 dev kilo0 onlink` is
 * written as a next hop `id N via 10.4.0.2 dev kilo0 onlink proto 107` and a route `10.42.2.0/24
 * nhid N`, which `ip route` prints with the gateway again, so the reads and the diff are unchanged.
 *
 * Why: Linux shares one fib_info among IPv4 routes with the same next hop, and finds it in a hash
 * that holds the device but not the gateway; 38,000 routes through 19,000 gateways on one device
 * are a quadratic walk, 6-8 s of system time in one `ip -batch`. A route by `nhid` hashes by the
 * id: the same routes and 19,000 next hops take 0.9 s (docs/performance.md, "Routes through
 * next-hop objects").
 *
 * Ownership is the kernel's, as for routes: a next hop is Kilo's when it carries Kilo's protocol.
 * New ones take free ids from kiloNexthopBase up (`add`, never `replace`: a foreign next hop at an
 * id is never overwritten); one no route of Kilo's uses is deleted after the routes are written.
 */

/** The first id Kilo gives a next hop (107 << 24): clear of the low ids tools and administrators pick. */
export const kiloNexthopBase = 107 * 2 ** 24;
const kiloNexthopEnd = kiloNexthopBase + 2 ** 24;

/** A next hop as `ip -j nexthop show` prints it. */
interface IpNexthopJson {
  id?: number;
  gateway?: string;
  dev?: string;
  flags?: string[];
  protocol?: string;
  group?: unknown;
}

/** What a route's next hop is, as a key: its gateway, device and onlink flag. */
function hopKey(gw: string, dev: string, onlink: boolean): string {
  return `${gw} ${dev}${onlink ? ' onlink' : ''}`;
}

/** One of Kilo's next hops: what a route by its id goes through. */
export interface Hop {
  key: string;
  gw: string;
  dev: string;
  onlink: boolean;
}

/**
 * Whether a route is written through a next hop: an IPv4 unicast route with a gateway (of either
 * family) and a device. IPv6 routes stay plain: the IPv6 table shares no next hop among routes, so
 * they cost the same either way (docs/performance.md), and Linux keeps an IPv6 route by `nhid`
 * with a source address no interface holds any more, where it takes the source off a plain one.
 * An IPv4 route by `nhid` loses its source as a plain one does (main table: the route goes).
 */
export function throughNexthop(r: KernelRoute): boolean {
  return r.type === 'unicast' && r.family === 4 && r.gw !== null && r.dev !== null;
}

/**
 * The id of each route (by routeKey) printed with `nhid`, from a read's `ip -N -j route show` texts:
 * what the reader's parse recorded (parseRoutes), else parsed here.
 */
export function routeNexthops(texts: readonly PrintedRoutes[]): Map<string, number> {
  const maps = texts.map((t) => (t.nhids ??= nhidsOf(t)));
  const filled = maps.filter((m) => m.size > 0);
  if (filled.length <= 1) return filled[0] ?? new Map<string, number>();
  const out = new Map<string, number>();
  for (const m of filled) for (const [key, id] of m) out.set(key, id);
  return out;
}

function nhidsOf({ family, json }: PrintedRoutes): Map<string, number> {
  const out = new Map<string, number>();
  if (!json.includes('"nhid"')) return out;
  for (const e of JSON.parse(json) as IpRouteJson[])
    if (e.nhid !== undefined && e.dst !== undefined) out.set(routeKey(printedKey(e, family)), e.nhid);
  return out;
}

/** The lines and their meaning for one apply. */
export interface NexthopWrite {
  /** `nexthop add` lines for next hops not in the kernel yet, run before the routes. */
  adds: string[];
  /** The id each line of `adds` creates, in order. */
  addIds: number[];
  /** The hopKey of each line of `adds`. */
  addKeys: string[];
  /** The next hop of each line of `adds`. */
  addHops: Hop[];
  /** The ids of `adds` by hopKey, until the kernel refuses one. */
  fresh: Map<string, number>;
  /** The id a route op is written through (after `added`), or undefined for a plain route. */
  idOf: (op: RouteOp) => number | undefined;
}

/**
 * Kilo's next hops in the kernel and which of Kilo's routes use them, from the last read and
 * followed through each apply since (the reconciler may trust its last write and not read).
 * Counts that miss a route (a route the kernel printed in a text other than the canonical one)
 * can only keep a next hop, never delete one in use.
 */
export class Nexthops {
  /** Kilo's next hops by hopKey. */
  private byHop = new Map<string, number>();
  private hopOf = new Map<number, Hop>();
  /** Every id in the kernel, Kilo's or not: a new one takes none of them. */
  private taken = new Set<number>();
  /** The next hop of each route of Kilo's written through one, by routeKey. */
  private routes = new Map<string, number>();
  private next = kiloNexthopBase;
  /** The digest (printed.ts) of the last read's next hops and the protocol they were parsed for. */
  private lastHops: { digest: string | null; protocol: number } | null = null;
  /** Whether `byHop`, `hopOf` and `taken` are still the last read's: no next hop added, deleted or taken since. */
  private hopsAsRead = false;
  /** The digest of the last read's route texts (routesDigest): undefined before a read, null for the first. */
  private lastRoutes: string | null | undefined = undefined;
  /** Whether `routes` is still the last read's: no write followed since. */
  private routesAsRead = false;
  /** `ip nexthop show` of a read, not parsed yet. */
  private pendingHops: string | null = null;
  /** The route texts of a read, not parsed yet: parsed when first needed, by the reader's parse if it comes first. */
  private pendingRoutes: readonly PrintedRoutes[] | null = null;
  /** unused(), until the next change (every pass asks). */
  private unusedNow: number[] | null = null;

  constructor(private readonly protocol: () => number) {}

  /** Takes a read: `ip -N -j nexthop show` and Kilo's routes (`ip -N -j route show` per family). */
  read(json: string, routeTexts: readonly PrintedRoutes[]): void {
    // Parsed when first needed: a one-shot apply that finds the routes equal to its plan never does.
    this.pendingHops = json;
    this.pendingRoutes = routeTexts;
    this.unusedNow = null;
  }

  /** Parses the last read's next hops, if not yet. */
  private parsedHops(): void {
    const json = this.pendingHops;
    if (json === null) return;
    this.pendingHops = null;
    // The same text as the last read's and nothing changed since (a quiet pass): the same next hops,
    // kept as they are rather than the text parsed again, or its parse kept to build them from.
    // The first read is not digested (printed.ts): nothing came before it, and kg apply reads once.
    const last = this.lastHops;
    const digest = last === null ? null : textDigest(json);
    const protocol = this.protocol();
    this.lastHops = { digest, protocol };
    if (this.hopsAsRead && digest !== null && last?.digest === digest && last.protocol === protocol) return;
    this.hopsAsRead = true;
    this.byHop = new Map();
    this.hopOf = new Map();
    this.taken = new Set();
    for (const e of JSON.parse(json || '[]') as IpNexthopJson[]) {
      if (e.id === undefined) continue;
      this.taken.add(e.id);
      const ours = e.protocol !== undefined && Number(e.protocol) === protocol;
      if (!ours || e.group !== undefined || !e.gateway || !e.dev) continue;
      const onlink = e.flags?.includes('onlink') ?? false;
      const key = hopKey(e.gateway, e.dev, onlink);
      // Two of Kilo's at one gateway (a crash between two writes): the first serves, the other is unused.
      if (!this.byHop.has(key)) this.byHop.set(key, e.id);
      this.hopOf.set(e.id, { key, gw: e.gateway, dev: e.dev, onlink });
    }
    this.unusedNow = null;
  }

  /** Takes the last read's routes, if not yet. */
  private parsedRoutes(): void {
    this.parsedHops();
    const texts = this.pendingRoutes;
    if (texts === null) return;
    this.pendingRoutes = null;
    const digest = this.lastRoutes === undefined ? null : routesDigest(texts);
    // The same texts as the last read's, and no write since (a quiet pass): the same routes, kept.
    if (!(this.routesAsRead && digest !== null && this.lastRoutes === digest)) this.routes = routeNexthops(texts);
    this.routesAsRead = true;
    this.lastRoutes = digest;
    this.unusedNow = null;
  }

  /** The next hops `ops` need, new ones at free ids. */
  plan(ops: readonly RouteOp[]): NexthopWrite {
    this.parsedHops();
    const adds: string[] = [];
    const addIds: number[] = [];
    const addKeys: string[] = [];
    const addHops: Hop[] = [];
    const fresh = new Map<string, number>();
    const protocol = this.protocol();
    for (const op of ops) {
      if (op.kind !== 'route' || op.action === 'del' || !throughNexthop(op.route)) continue;
      const r = op.route;
      const key = hopKey(r.gw!, r.dev!, r.onlink);
      if (this.byHop.has(key) || fresh.has(key)) continue;
      const id = this.freeId();
      if (id === undefined) break;
      fresh.set(key, id);
      addIds.push(id);
      addKeys.push(key);
      addHops.push({ key, gw: r.gw!, dev: r.dev!, onlink: r.onlink });
      adds.push(`nexthop add id ${id} via ${r.gw} dev ${r.dev}${r.onlink ? ' onlink' : ''} proto ${protocol}`);
    }
    const idOf = (op: RouteOp) => {
      if (op.kind !== 'route' || op.action === 'del' || !throughNexthop(op.route)) return undefined;
      const key = hopKey(op.route.gw!, op.route.dev!, op.route.onlink);
      // A next hop the kernel refused (`added`) leaves its routes plain.
      return this.byHop.get(key) ?? fresh.get(key);
    };
    return { adds, addIds, addKeys, addHops, fresh, idOf };
  }

  private freeId(): number | undefined {
    for (let tries = 0; tries < 2 ** 24; tries++) {
      const id = this.next;
      this.next = id + 1 >= kiloNexthopEnd ? kiloNexthopBase : id + 1;
      if (!this.taken.has(id)) {
        this.taken.add(id);
        this.hopsAsRead = false;
        return id;
      }
    }
    return undefined;
  }

  /** Records the next hops the kernel took: every line of `write.adds` but the `failed` indices. */
  added(write: NexthopWrite, failed: ReadonlySet<number>): void {
    this.parsedHops();
    this.unusedNow = null;
    if (write.addIds.length > 0) this.hopsAsRead = false;
    write.addIds.forEach((id, i) => {
      const key = write.addKeys[i]!;
      if (failed.has(i)) {
        this.taken.delete(id);
        write.fresh.delete(key);
        return;
      }
      this.byHop.set(key, id);
      this.hopOf.set(id, write.addHops[i]!);
    });
  }

  /** Follows the routes `ops` wrote (only those that took effect), `ids` as written (idOf). */
  wrote(ops: readonly RouteOp[], ids: readonly (number | undefined)[]): void {
    this.parsedRoutes();
    this.unusedNow = null;
    ops.forEach((op, i) => {
      if (op.kind !== 'route') return;
      this.routesAsRead = false;
      const key = routeKey(op.route);
      const id = ids[i];
      if (id === undefined) this.routes.delete(key);
      else this.routes.set(key, id);
    });
  }

  /**
   * Kilo's next hops by id: where `net.ipv4.nexthop_compat_mode` is 0 the kernel prints a route by
   * `nhid` alone, and the reader takes its gateway, device and onlink flag from here.
   */
  get hops(): ReadonlyMap<number, Hop> {
    this.parsedHops();
    return this.hopOf;
  }

  /** Kilo's next hops no route of Kilo's uses (left by a change of gateway, a clean-up or a crash). */
  unused(): readonly number[] {
    this.parsedRoutes();
    if (this.unusedNow) return this.unusedNow;
    const used = new Set(this.routes.values());
    this.unusedNow = this.hopOf.size === 0 ? [] : [...this.hopOf.keys()].filter((id) => !used.has(id));
    return this.unusedNow;
  }

  /** Forgets next hops the kernel deleted. */
  deleted(ids: readonly number[]): void {
    this.parsedHops();
    this.unusedNow = null;
    if (ids.length > 0) this.hopsAsRead = false;
    for (const id of ids) {
      const key = this.hopOf.get(id)?.key;
      this.hopOf.delete(id);
      this.taken.delete(id);
      if (key !== undefined && this.byHop.get(key) === id) this.byHop.delete(key);
    }
  }
}
