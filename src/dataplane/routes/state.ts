import { kiloTable, type PlanRoute, type PlanRule } from '../../mesh/types.js';
import { isCanonicalPrefix4, type Family } from '../../net/cidr.js';
import { AddressMemo } from '../../net/memo.js';
import type { DeviceNames } from '../types.js';
import { kiloRouteProtocol, kiloRulePriority, mainTableId } from './constants.js';

/**
 * A route as the kernel holds it, in src/net's canonical text (prefixes as `Cidr.networkText`,
 * addresses as `IP.text`) and with numeric tables, so that what the plan wants and what
 * `ip -j route` shows compare as plain values.
 */
export interface KernelRoute {
  family: Family;
  /** Network CIDR, e.g. "10.42.3.0/24", "fd00::/64"; a default route is "0.0.0.0/0" / "::/0". */
  dst: string;
  /** Numeric table id (254 = main). */
  table: number;
  /** The kernel's metric: 0 for IPv4 and 1024 for IPv6 when none is given. */
  metric: number;
  gw: string | null;
  /** null for a multipath route, which Kilo never installs. */
  dev: string | null;
  src: string | null;
  onlink: boolean;
  /** Route type; "unicast" unless a blackhole, unreachable, … */
  type: string;
  /** Kernel route protocol number. */
  protocol: number;
}

export interface KernelRule {
  family: Family;
  priority: number;
  /** Selector CIDRs; null = all. */
  src: string | null;
  dst: string | null;
  iif: string | null;
  /** Firewall mark selector as iproute2 writes it: "0x453", or "0x453/0xff" with a partial mask. */
  fwmark: string | null;
  /** `not`: the rule applies to packets its selectors do not match. */
  invert: boolean;
  table: number;
}

/** The marks that make a route or rule Kilo's (see constants.ts); tests may pick others. */
export interface Ownership {
  protocol: number;
  priority: number;
}

export const defaultOwnership: Ownership = { protocol: kiloRouteProtocol, priority: kiloRulePriority };

export function defaultMetric(family: Family): number {
  return family === 4 ? 0 : 1024;
}

/**
 * What identifies a route to the kernel within its table: destination and metric (TOS is never
 * used by Kilo). Two routes with the same key are one route in two versions: `replace` turns one
 * into the other.
 */
export function routeKey(r: Pick<KernelRoute, 'table' | 'dst' | 'metric'>): string {
  return keyOf(r.table, r.dst, r.metric);
}

/**
 * Joined, not concatenated: a join is one flat string, where `${a} ${b} ${c}` is a tree of them
 * that a map keeps whole; at 20,000 nodes the keys kept by the desired state and the next hops
 * are 120,000, and their trees 3.7 MiB (docs/performance.md).
 */
function keyOf(table: number, dst: string, metric: number): string {
  return [table, dst, metric].join(' ');
}

export function sameRoute(a: KernelRoute, b: KernelRoute): boolean {
  return routeKey(a) === routeKey(b) && sameRouteAtKey(a, b);
}

/** sameRoute for two routes already known to share a key. */
export function sameRouteAtKey(a: KernelRoute, b: KernelRoute): boolean {
  return (
    a.gw === b.gw &&
    a.dev === b.dev &&
    a.src === b.src &&
    a.onlink === b.onlink &&
    a.type === b.type &&
    a.protocol === b.protocol
  );
}

/** A rule's whole content is its identity: rules have no key apart from it. */
export function ruleKey(r: KernelRule): string {
  return `${r.family} ${r.priority} ${r.invert ? 'not ' : ''}${r.src ?? 'all'} ${r.dst ?? 'all'} ${r.iif ?? '-'} ${r.fwmark ?? '-'} ${r.table}`;
}

/** The gateway as iproute2 writes and prints it: a gateway of the other family names its family. */
export function gatewayText(r: KernelRoute): string {
  if (r.gw === null) return '';
  const v6 = r.gw.includes(':');
  return v6 === (r.family === 6) ? r.gw : `${v6 ? 'inet6' : 'inet'} ${r.gw}`;
}

function tableName(table: number): string {
  return table === mainTableId ? 'main' : String(table);
}

/** Names a route the way `ip route` would show it; used in errors and in Ops details. */
export function describeRoute(r: KernelRoute): string {
  let s = `route ${r.type === 'unicast' ? '' : `${r.type} `}${r.dst}`;
  if (r.gw) s += ` via ${gatewayText(r)}`;
  if (r.dev) s += ` dev ${r.dev}`;
  if (r.src) s += ` src ${r.src}`;
  if (r.onlink) s += ' onlink';
  if (r.table !== mainTableId) s += ` table ${tableName(r.table)}`;
  if (r.metric !== defaultMetric(r.family)) s += ` metric ${r.metric}`;
  return s;
}

export function describeRule(r: KernelRule): string {
  let s = `rule${r.family === 6 ? ' -6' : ''}${r.invert ? ' not' : ''} from ${r.src ?? 'all'}`;
  if (r.dst) s += ` to ${r.dst}`;
  if (r.iif) s += ` iif ${r.iif}`;
  if (r.fwmark) s += ` fwmark ${r.fwmark}`;
  return `${s} lookup ${tableName(r.table)} priority ${r.priority}`;
}

/** A plan entry the dataplane cannot express on this machine, named for the log. */
export interface PlanProblem {
  object: string;
  message: string;
}

export interface DesiredState {
  routes: KernelRoute[];
  rules: KernelRule[];
  /** Entries left out; their keys must not be deleted either (see `protectedKeys`). */
  problems: PlanProblem[];
  /** Route keys of routes that could not be expressed: what is installed there stays. */
  protectedKeys: Set<string>;
  /** `routes` by routeKey (one each). */
  byKey: Map<string, KernelRoute>;
}

/**
 * Interface names go into `ip -batch` lines unquoted, and a malformed argument makes iproute2 exit
 * without saying which line it was on; so names are checked here (Linux: 1–15 bytes, no '/',
 * no whitespace).
 */
const deviceName = /^[^\s/'"\\#]{1,15}$/;

export function isDeviceName(name: string): boolean {
  return deviceName.test(name);
}

/** A firewall mark as iproute2 prints and reads it; the full mask is implied and left out. */
export function markText(mark: number, mask = 0xffffffff): string {
  const m = `0x${(mark >>> 0).toString(16)}`;
  return mask >>> 0 === 0xffffffff ? m : `${m}/0x${(mask >>> 0).toString(16)}`;
}

/** Why a route of a role with no interface cannot be installed, in the words an operator needs. */
const missingRole: Record<PlanRoute['dev'], string> = {
  kilo: 'device role kilo has no interface on this node (the WireGuard interface is missing)',
  private: "device role private has no interface on this node (no interface holds the node's internal IP)",
  // The plan uses the tunnel only when encapsulating, so a missing one means IPIP is unavailable.
  tunnel: 'the IPIP tunnel has no interface on this node (no tunl0: the kernel has no ipip module)',
};

function planRouteText(r: PlanRoute): string {
  let s = `route ${r.dst}`;
  if (r.gw) s += ` via ${r.gw}`;
  s += ` dev ${r.dev}`;
  if (r.table !== 'main') s += ` table ${r.table}`;
  return s;
}

/**
 * Turns the plan's routes and rules into kernel form with real device names and Kilo's protocol
 * and priority. Entries that cannot be expressed (a role without an interface, an unparsable
 * address) become problems; the rest is still returned. `memo` is the caller's, kept across its
 * reconciles; a fresh one parses everything. `proven[i]`, when set, is `routes[i]` in kernel form,
 * taken as it is without parsing: a route the kernel printed exactly as the plan's texts, which are
 * therefore canonical and valid (see the reconciler's once path).
 */
export function desiredState(
  routes: readonly PlanRoute[],
  rules: readonly PlanRule[],
  devices: DeviceNames,
  owner: Ownership = defaultOwnership,
  memo: AddressMemo = new AddressMemo(),
  proven?: readonly (KernelRoute | undefined)[],
): DesiredState {
  const out: DesiredState = { routes: [], rules: [], problems: [], protectedKeys: new Set(), byKey: new Map() };
  addRoutes(out, routes, devices, owner.protocol, memo, proven);
  addRules(out, rules, devices, owner.priority, memo);
  return out;
}

function addRoutes(
  out: DesiredState,
  routes: readonly PlanRoute[],
  devices: DeviceNames,
  protocol: number,
  memo: AddressMemo,
  proven?: readonly (KernelRoute | undefined)[],
): void {
  // Device names are checked once per role, not once per route.
  const badRole = new Map<PlanRoute['dev'], string | null>();
  for (const role of ['kilo', 'private', 'tunnel'] as const) {
    const dev = devices[role];
    badRole.set(
      role,
      dev === null
        ? missingRole[role]
        : deviceName.test(dev)
          ? null
          : `interface name ${JSON.stringify(dev)} (role ${role}) is not valid`,
    );
  }
  for (const [i, r] of routes.entries()) {
    const known = proven?.[i];
    if (known !== undefined && badRole.get(r.dev) === null) {
      addRoute(out, routeKey(known), known, r);
      continue;
    }
    const dst = canonicalPrefix4(r.dst) ?? memo.prefix(r.dst);
    if (!dst) {
      out.problems.push({ object: planRouteText(r), message: `dst ${JSON.stringify(r.dst)} is not a CIDR` });
      continue;
    }
    const table = r.table === 'main' ? mainTableId : r.table;
    const metric = defaultMetric(dst.family);
    const key = keyOf(table, dst.networkText, metric);
    const gw = r.gw === null ? null : memo.address(r.gw);
    const src = r.src === null ? null : memo.address(r.src);
    let message = badRole.get(r.dev) ?? null;
    if (message !== null) {
      // fall through to the report below
    } else if (r.gw !== null && !gw) message = `gateway ${JSON.stringify(r.gw)} is not an IP address`;
    // An IPv4 route may go via an IPv6 next hop (RFC 5549, Linux 5.2+); the reverse the kernel refuses
    // ("IPv6 does not support RTA_VIA attribute", and nexthop objects refuse it too).
    else if (gw && gw.family === 4 && dst.family === 6)
      message = `IPv6 destination ${dst.networkText} cannot have IPv4 gateway ${gw.text}: Linux has no IPv4 next hop for IPv6 routes`;
    else if (r.src !== null && (!src || src.family !== dst.family))
      message = `src ${JSON.stringify(r.src)} is not an IPv${dst.family} address`;
    if (message !== null) {
      out.problems.push({ object: planRouteText(r), message });
      out.protectedKeys.add(key);
      continue;
    }
    const route: KernelRoute = {
      family: dst.family,
      dst: dst.networkText,
      table,
      metric,
      gw: gw?.text ?? null,
      dev: devices[r.dev]!,
      src: src?.text ?? null,
      onlink: r.onlink,
      type: 'unicast',
      protocol,
    };
    addRoute(out, key, route, r);
  }
}

/** `{ family: 4, networkText: text }` when `text` is a canonical IPv4 prefix (isCanonicalPrefix4), else null (then Cidr decides). */
export function canonicalPrefix4(text: string): { family: 4; networkText: string } | null {
  return isCanonicalPrefix4(text) ? { family: 4, networkText: text } : null;
}

/** `route` (planned as `r`) under `key`, unless an earlier route holds the key (a conflict if they differ). */
function addRoute(out: DesiredState, key: string, route: KernelRoute, r: PlanRoute): void {
  const earlier = out.byKey.get(key);
  if (earlier) {
    if (!sameRoute(earlier, route)) {
      out.problems.push({
        object: planRouteText(r),
        message: `conflicts with ${describeRoute(earlier)} (same destination and table)`,
      });
    }
    return;
  }
  out.byKey.set(key, route);
  out.routes.push(route);
}

function addRules(
  out: DesiredState,
  rules: readonly PlanRule[],
  devices: DeviceNames,
  priority: number,
  memo: AddressMemo,
): void {
  const seenRules = new Set<string>();
  for (const r of rules) {
    const mark = r.fwmark === undefined ? null : r.fwmark;
    const object = `rule ${r.invert ? 'not ' : ''}from ${r.src ?? 'all'}${r.dst ? ` to ${r.dst}` : ''}${r.iif ? ` iif ${r.iif}` : ''}${mark === null ? '' : ` fwmark ${mark}`} lookup ${r.table}`;
    const src = r.src === null ? null : memo.prefix(r.src);
    const dst = r.dst === null ? null : memo.prefix(r.dst);
    if ((r.src !== null && !src) || (r.dst !== null && !dst)) {
      out.problems.push({ object, message: `selector ${JSON.stringify(!src ? r.src : r.dst)} is not a CIDR` });
      continue;
    }
    if (mark !== null && !(Number.isInteger(mark) && mark > 0 && mark <= 0xffffffff)) {
      // Mark 0 would mean "no mark selector" to the kernel: a different rule than the plan's.
      out.problems.push({ object, message: `fwmark ${mark} is not a number from 1 to 0xffffffff` });
      continue;
    }
    if (src && dst && src.family !== dst.family) {
      out.problems.push({ object, message: 'from and to are of different IP families' });
      continue;
    }
    let iif: string | null = null;
    if (r.iif === 'kilo') {
      if (!deviceName.test(devices.kilo)) {
        out.problems.push({ object, message: `interface name ${JSON.stringify(devices.kilo)} is not valid` });
        continue;
      }
      iif = devices.kilo;
    }
    // A rule without address selectors applies to both families.
    const families: Family[] = src ? [src.family] : dst ? [dst.family] : [4, 6];
    for (const family of families) {
      const rule: KernelRule = {
        family,
        priority,
        src: src?.networkText ?? null,
        dst: dst?.networkText ?? null,
        iif,
        fwmark: mark === null ? null : markText(mark),
        invert: r.invert ?? false,
        table: r.table === kiloTable ? kiloTable : r.table,
      };
      const k = ruleKey(rule);
      if (seenRules.has(k)) continue;
      seenRules.add(k);
      out.rules.push(rule);
    }
  }
}
