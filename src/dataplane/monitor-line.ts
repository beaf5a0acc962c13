import { Cidr, IP, type Family } from '../net/cidr.js';
import { mainTableId } from './routes/constants.js';
import { isRouteTypeName, routeTypeName } from './routes/route-type.js';
import { defaultMetric } from './routes/state.js';

/**
 * One change to Kilo's part of the kernel, read from a line of `ip -o monitor`. Routes are in the
 * canonical form of routes/state.ts's KernelRoute (network CIDR, numeric table, canonical IPs), so
 * an event's `${table} ${dst} ${metric}` is the route's `routeKey`.
 */
export type RoutingEvent =
  | {
      kind: 'route';
      deleted: boolean;
      family: Family;
      /** Network CIDR: "10.42.3.0/24", "10.42.4.7/32", "0.0.0.0/0", "fd00:42:4::/64". */
      dst: string;
      table: number;
      metric: number;
      gateway: string | null;
      /** null for a multipath route (Kilo installs none) or one without a device (blackhole). */
      dev: string | null;
      src: string | null;
      onlink: boolean;
      /** "unicast", "blackhole", "unreachable", … or the type number iproute2 printed. */
      type: string;
    }
  | {
      kind: 'rule';
      deleted: boolean;
      /** null when the line does not tell: a rule whose selectors are all "all" looks the same in both families. */
      family: Family | null;
    }
  | { kind: 'link'; name: string; deleted: boolean; up: boolean; mtu: number | null }
  | {
      kind: 'address';
      name: string;
      deleted: boolean;
      family: Family;
      /** "10.4.0.1/16", host bits kept. */ cidr: string;
    }
  /** The monitor was blind for a while (its `ip monitor` exited, or netlink dropped events): read everything. */
  | { kind: 'lost'; reason: string }
  /** A monitor is subscribed again: what happens from now on is reported; a full read now misses nothing. */
  | { kind: 'ready' };

/** What makes a line Kilo's: the routes' protocol, the rules' priority, the interfaces by name. */
export interface MonitorFilter {
  protocol: number;
  priority: number;
  interfaces: readonly string[];
}

// Names iproute2 prints where `-N` is not in force (the parser reads both forms).
const tableNames: Record<string, number> = { main: mainTableId, local: 255, default: 253, unspec: 0 };
const protocolNames: Record<string, number> = { unspec: 0, redirect: 1, kernel: 2, boot: 3, static: 4 };
const protocolByNumber: readonly string[] = ['unspec', 'redirect', 'kernel', 'boot', 'static'];
// Route attributes that are followed by a value; the others seen in a route line are flags.
const withValue = new Set([
  'via',
  'dev',
  'table',
  'proto',
  'metric',
  'src',
  'scope',
  'tos',
  'dsfield',
  'mtu',
  'expires',
  'pref',
  'nhid',
  'realms',
  'error',
  'advmss',
  'rtt',
  'rttvar',
  'reordering',
  'window',
  'cwnd',
  'ssthresh',
  'initcwnd',
  'initrwnd',
  'features',
  'quickack',
  'congctl',
  'fastopen_no_cookie',
  'hoplimit',
  'rto_min',
  'ttl-propagate',
  'as',
  'from',
  'iif',
  'oif',
  'uid',
  'mark',
  'cache',
]);

const linkLine = /^(\d+): ([^:\s]+): <([^>]*)>(?:.* mtu (\d+))?/;
const addressLine = /^\d+: (\S+)\s+(inet6?) (\S+)(?: peer (\S+))?/;
const ruleLine = /^(\d+):\t(.*)$/;

function numeric(value: string, names: Record<string, number>): number {
  return /^\d+$/.test(value) ? Number(value) : (names[value] ?? -1);
}

function canonicalIP(text: string): string | null {
  return IP.tryParse(text)?.text ?? null;
}

/**
 * Parses one line of `ip [-N] -o monitor route rule link address` (iproute2 6.1) into an event, or
 * null when the line is not about Kilo's routes, rules or interfaces or cannot be read. Never throws:
 * an odd line must not take the monitor down.
 */
export function parseMonitorLine(line: string, filter: MonitorFilter): RoutingEvent | null {
  try {
    return parse(line, filter);
  } catch {
    return null;
  }
}

function parse(raw: string, filter: MonitorFilter): RoutingEvent | null {
  const deleted = raw.startsWith('Deleted ');
  const line = deleted ? raw.slice(8) : raw;
  // Link, address and rule lines start with a number and a colon; a route line never does.
  const first = line.indexOf(':');
  if (first > 0 && /^\d+$/.test(line.slice(0, first))) {
    const rule = ruleLine.exec(line);
    if (rule) return Number(rule[1]) === filter.priority ? ruleEvent(rule[2]!, deleted) : null;
    const link = linkLine.exec(line);
    if (link) {
      // A veth or tunnel prints "kilo0@peer"; the name is what comes before the "@".
      const at = link[2]!.lastIndexOf('@');
      const name = at > 0 ? link[2]!.slice(0, at) : link[2]!;
      if (!filter.interfaces.includes(name)) return null;
      const up = link[3]!.split(',').includes('UP');
      return { kind: 'link', name, deleted, up, mtu: link[4] === undefined ? null : Number(link[4]) };
    }
    const address = addressLine.exec(line);
    if (address) return addressEvent(address, deleted, filter);
    return null;
  }
  return routeEvent(line, deleted, filter);
}

function ruleEvent(body: string, deleted: boolean): RoutingEvent {
  const words = body.split(/\s+/);
  let family: Family | null = null;
  for (let i = 0; i < words.length - 1; i++) {
    if (words[i] !== 'from' && words[i] !== 'to') continue;
    const sel = words[i + 1]!;
    if (sel !== 'all') family = sel.includes(':') ? 6 : 4;
  }
  return { kind: 'rule', deleted, family };
}

function addressEvent(m: RegExpExecArray, deleted: boolean, filter: MonitorFilter): RoutingEvent | null {
  const name = m[1]!;
  if (!filter.interfaces.includes(name)) return null;
  const family: Family = m[2] === 'inet6' ? 6 : 4;
  // The kernel makes and owns IPv6 link-local addresses (links.ts leaves them alone too).
  if (family === 6 && / scope (link|253) /.test(m.input)) return null;
  // A point-to-point address prints "10.0.0.1 peer 10.0.0.2/32": the prefix is the peer's.
  const local = m[3]!;
  const slash = (m[4] ?? local).indexOf('/');
  const len = slash < 0 ? (family === 4 ? '32' : '128') : (m[4] ?? local).slice(slash + 1);
  const ip = canonicalIP(local.split('/')[0]!);
  if (ip === null || !/^\d+$/.test(len)) return null;
  return { kind: 'address', name, deleted, family, cidr: `${ip}/${len}` };
}

function hasWord(line: string, key: string): boolean {
  let at = line.indexOf(key);
  while (at >= 0) {
    const next = line[at + key.length];
    if (next === undefined || next === ' ' || next === '\t') return true;
    at = line.indexOf(key, at + 1);
  }
  return false;
}

function hasProtocol(line: string, protocol: number): boolean {
  if (hasWord(line, ` proto ${protocol}`)) return true;
  const name = protocolByNumber[protocol];
  return name !== undefined && hasWord(line, ` proto ${name}`);
}

function routeEvent(line: string, deleted: boolean, filter: MonitorFilter): RoutingEvent | null {
  // Most lines in a burst are someone else's: decide that before splitting the line. (iproute2
  // leaves out "proto boot", so a filter on boot cannot use the shortcut.)
  if (filter.protocol !== protocolNames.boot && !hasProtocol(line, filter.protocol)) return null;
  const words = line.trim().split(/\s+/);
  let i = 0;
  let type = 'unicast';
  // A type word (or its number under -N) comes before the destination when the route is not unicast.
  if (isRouteTypeName(words[0]!) || (/^\d+$/.test(words[0]!) && words.length > 1)) type = words[i++]!;
  const dstText = words[i++];
  if (dstText === undefined) return null;
  let gateway: string | null = null;
  let dev: string | null = null;
  let src: string | null = null;
  let table = mainTableId;
  let metric: number | null = null;
  let protocol = protocolNames.boot!;
  let onlink = false;
  let ipv6Hint = false;
  while (i < words.length) {
    const w = words[i]!;
    // What follows is per next hop (multipath) or encapsulation: not this route's own attributes.
    if (w === 'nexthop') {
      dev = null;
      gateway = null;
      break;
    }
    // `-o` joins a multipath route's lines with "\\"; "encap" starts a tunnel's own attributes.
    if (w === '\\' || w === 'encap') break;
    if (w === 'onlink') onlink = true;
    if (!withValue.has(w)) {
      i++;
      continue;
    }
    let value = words[i + 1] ?? '';
    if (w === 'via' && (value === 'inet' || value === 'inet6')) value = words[++i + 1] ?? '';
    if (w === 'mtu' && value === 'lock') value = words[++i + 1] ?? '';
    switch (w) {
      case 'via':
        gateway = canonicalIP(value);
        if (gateway === null) return null;
        break;
      case 'dev':
        dev = value;
        break;
      case 'src':
        src = canonicalIP(value);
        break;
      case 'table':
        table = numeric(value, tableNames);
        break;
      case 'proto':
        protocol = numeric(value, protocolNames);
        break;
      case 'metric':
        metric = Number(value);
        break;
      case 'pref':
        // Only IPv6 routes carry a router preference: tells a "default" route's family.
        ipv6Hint = true;
        break;
    }
    i += 2;
  }
  if (protocol !== filter.protocol) return null;
  let family: Family;
  let dst: string;
  if (dstText === 'default') {
    family = gateway !== null && !gateway.includes(':') ? 4 : gateway !== null || ipv6Hint ? 6 : 4;
    dst = family === 4 ? '0.0.0.0/0' : '::/0';
  } else {
    const p = Cidr.tryParsePrefix(dstText);
    if (!p) return null;
    family = p.family;
    dst = p.networkText;
  }
  return {
    kind: 'route',
    deleted,
    family,
    dst,
    table,
    metric: metric ?? defaultMetric(family),
    gateway,
    dev,
    src,
    onlink,
    type: routeTypeName(type),
  };
}
