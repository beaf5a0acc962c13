import type { Family } from '../../net/cidr.js';
import { AddressMemo } from '../../net/memo.js';
import { mainTableId } from './constants.js';
import type { RouteOp } from './diff.js';
import type { Hop } from './nexthops.js';
import { routeTypeName } from './route-type.js';
import { defaultMetric, gatewayText, markText, routeKey, type KernelRoute, type KernelRule } from './state.js';

/**
 * iproute2's JSON (`ip -N -j route|rule show`) to kernel form and RouteOps to `ip -batch` lines.
 * `-N` makes tables and protocols numeric, so a name an administrator gave table 1107 or protocol
 * 107 in /etc/iproute2 changes nothing.
 */

export interface IpRouteJson {
  type?: string;
  dst?: string;
  gateway?: string;
  /** A gateway of the other family (`via inet6 …` on an IPv4 route) is printed here, not as `gateway`. */
  via?: { family?: string; host?: string };
  dev?: string;
  prefsrc?: string;
  flags?: string[];
  table?: string;
  metric?: number;
  protocol?: string;
  nexthops?: unknown[];
  /** Through a next-hop object (nexthops.ts). */
  nhid?: number;
}

interface IpRuleJson {
  priority?: number;
  src?: string;
  srclen?: number;
  dst?: string;
  dstlen?: number;
  iif?: string;
  fwmark?: string;
  fwmask?: string;
  /** Present (as null) on a `not` rule. */
  not?: null;
  table?: string;
}

// Names iproute2 prints when a number has one and -N is not honoured (older versions).
const tableNames: Record<string, number> = { main: mainTableId, local: 255, default: 253, unspec: 0 };
const protocolNames: Record<string, number> = { unspec: 0, redirect: 1, kernel: 2, boot: 3, static: 4 };

function numeric(value: string | undefined, names: Record<string, number>, fallback: number): number {
  if (value === undefined) return fallback;
  if (/^\d+$/.test(value)) return Number(value);
  return names[value] ?? -1;
}

function prefix(memo: AddressMemo, family: Family, text: string | undefined, len: number | undefined): string | null {
  if (text === undefined || text === 'all') return null;
  if (text === 'default') return family === 4 ? '0.0.0.0/0' : '::/0';
  const p = memo.prefix(len === undefined || text.includes('/') ? text : `${text}/${len}`);
  if (!p) throw new Error(`ip printed an address this reader does not know: ${JSON.stringify(text)}`);
  return p.networkText;
}

function canonicalIP(memo: AddressMemo, text: string | undefined): string | null {
  if (text === undefined) return null;
  return memo.address(text)?.text ?? text;
}

/**
 * The table, metric and destination of a route as `ip -N -j` prints it, the kernel's defaults filled
 * in and a host route given its length: what routeKey reads, without parsing an address (the
 * destination as printed, canonical for IPv4).
 */
export function printedKey(e: IpRouteJson, family: Family): { table: number; metric: number; dst: string } {
  const dst =
    e.dst === undefined || e.dst === 'default'
      ? family === 4
        ? '0.0.0.0/0'
        : '::/0'
      : e.dst.includes('/')
        ? e.dst
        : `${e.dst}/${family === 4 ? 32 : 128}`;
  return { table: numeric(e.table, tableNames, mainTableId), metric: e.metric ?? defaultMetric(family), dst };
}

/**
 * Parses `ip -N -j -<family> route show …`. `protocol` stands in when the output omits it (it does
 * when the listing was filtered by protocol). `memo` is the reader's, kept across its reads.
 * `expected` (routes by routeKey, in canonical text): a route printed exactly as one of them is that
 * route object, taken without parsing its addresses; text the kernel printed differently from the
 * canonical form (an IPv6 address, a host route without its length) is parsed as before.
 */
export function parseRoutes(
  json: string,
  family: Family,
  protocol: number,
  memo: AddressMemo = new AddressMemo(),
  expected?: ReadonlyMap<string, KernelRoute>,
  /** Kilo's next hop of an id, for a route printed by `nhid` alone (nexthops.ts). */
  hopOf?: (id: number) => Hop | undefined,
  /** Filled with the id of each route printed with `nhid`, by routeKey: the next hops' routes, from this one parse. */
  nhids?: Map<string, number>,
): KernelRoute[] {
  const entries = JSON.parse(json || '[]') as IpRouteJson[];
  const any = family === 4 ? '0.0.0.0/0' : '::/0';
  return entries.map((e) => {
    const key = printedKey(e, family);
    const { table, metric } = key;
    const type = e.type === undefined ? 'unicast' : routeTypeName(e.type);
    const kernelProtocol = numeric(e.protocol, protocolNames, protocol);
    const hop = e.nhid !== undefined && e.dev === undefined ? hopOf?.(e.nhid) : undefined;
    const onlink = hop?.onlink ?? e.flags?.includes('onlink') ?? false;
    const dev = e.nexthops ? null : (e.dev ?? hop?.dev ?? null);
    const gw = e.gateway ?? e.via?.host ?? hop?.gw;
    const byNhid = nhids !== undefined && e.nhid !== undefined && e.dst !== undefined;
    const k = expected !== undefined || byNhid ? routeKey(key) : '';
    if (byNhid) nhids.set(k, e.nhid!);
    const want = expected?.get(k);
    if (
      want !== undefined &&
      want.family === family &&
      want.gw === (gw ?? null) &&
      want.dev === dev &&
      want.src === (e.prefsrc ?? null) &&
      want.onlink === onlink &&
      want.type === type &&
      want.protocol === kernelProtocol
    )
      return want;
    return {
      family,
      dst: prefix(memo, family, e.dst, undefined) ?? any,
      table,
      metric,
      gw: canonicalIP(memo, gw),
      dev,
      src: canonicalIP(memo, e.prefsrc),
      onlink,
      type,
      protocol: kernelProtocol,
    };
  });
}

/** Parses `ip -N -j -<family> rule show`, keeping only rules at `priority` (all when null). */
export function parseRules(
  json: string,
  family: Family,
  priority: number | null,
  memo: AddressMemo = new AddressMemo(),
): KernelRule[] {
  const entries = JSON.parse(json || '[]') as IpRuleJson[];
  return entries
    .filter((e) => priority === null || e.priority === priority)
    .map((e) => ({
      family,
      priority: e.priority ?? 0,
      src: prefix(memo, family, e.src, e.srclen),
      dst: prefix(memo, family, e.dst, e.dstlen),
      iif: e.iif ?? null,
      fwmark:
        e.fwmark === undefined
          ? null
          : markText(Number(e.fwmark), e.fwmask === undefined ? undefined : Number(e.fwmask)),
      invert: 'not' in e,
      table: numeric(e.table, tableNames, mainTableId),
    }));
}

/**
 * One `ip -batch` line, without a family option: iproute2 takes none per line. Routes get their
 * family from their addresses; rules do not, so IPv6 rules must go to an `ip -6 -batch`.
 */
export function renderOp(op: RouteOp): string {
  if (op.kind === 'route') return `route ${op.action} ${typed(op.action, op.route)}${routeTail(op.action, op.route)}`;
  const r = op.rule;
  let line = `rule ${op.action}`;
  if (r.invert) line += ' not';
  if (r.src) line += ` from ${r.src}`;
  if (r.dst) line += ` to ${r.dst}`;
  if (r.iif) line += ` iif ${r.iif}`;
  if (r.fwmark) line += ` fwmark ${r.fwmark}`;
  return `${line} lookup ${r.table} priority ${r.priority}`;
}

/**
 * The destination, after the type when it is not unicast (the fail-closed guard's blackhole), and
 * always in a delete: Linux takes an IPv4 delete's metric 0 as any metric, so `route del X metric 0`
 * of a route already gone would remove the guard's blackhole at X instead; with the type it cannot.
 */
function typed(action: RouteOp['action'], r: KernelRoute): string {
  return r.type === 'unicast' && action !== 'del' ? r.dst : `${r.type} ${r.dst}`;
}

/** What follows a route line's destination. */
function routeTail(action: RouteOp['action'], r: KernelRoute, nhid?: number): string {
  let line = '';
  // Through a next-hop object (nexthops.ts): the gateway, device and onlink are the object's.
  if (action !== 'del' && nhid !== undefined) line += ` nhid ${nhid}${r.src ? ` src ${r.src}` : ''}`;
  else if (action !== 'del') {
    if (r.gw) line += ` via ${gatewayText(r)}`;
    if (r.dev) line += ` dev ${r.dev}`;
    if (r.src) line += ` src ${r.src}`;
    if (r.onlink) line += ' onlink';
  }
  // A delete names table, metric and protocol: the kernel then removes only a route of ours.
  return `${line} table ${r.table} metric ${r.metric} proto ${r.protocol}`;
}

/**
 * renderOp of each op, through the next hop `nexthopOf` gives a route (nexthops.ts). A plan's
 * routes come in runs through one gateway (a location's pod CIDRs behind its leader): a route like
 * the one before it reuses the text after its destination.
 */
export function renderOps(ops: readonly RouteOp[], nexthopOf?: (op: RouteOp) => number | undefined): string[] {
  let last: { action: RouteOp['action']; route: KernelRoute; nhid: number | undefined; tail: string } | null = null;
  return ops.map((op) => {
    if (op.kind !== 'route') return renderOp(op);
    const r = op.route;
    const nhid = nexthopOf?.(op);
    const l = last?.action === op.action && last.nhid === nhid ? last.route : null;
    const same =
      l !== null &&
      l.gw === r.gw &&
      l.dev === r.dev &&
      l.src === r.src &&
      l.onlink === r.onlink &&
      l.table === r.table &&
      l.metric === r.metric &&
      l.protocol === r.protocol &&
      l.family === r.family;
    if (!same || !last) last = { action: op.action, route: r, nhid, tail: routeTail(op.action, r, nhid) };
    return `route ${op.action} ${typed(op.action, r)}${last.tail}`;
  });
}
