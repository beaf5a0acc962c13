import { Cidr, IP } from '../net/cidr.js';
import { noValues, pair, single, type ByFamily } from '../net/family.js';
import { Annotation, defaultTopologyLabel } from './annotations.js';
import { lostIPv6Pods } from './ipv6-pods.js';
import { ValidationError } from './errors.js';
import {
  checkShape,
  nodeShape,
  objectLabel,
  objectShape,
  peerShape,
  plainNode,
  plainObjectHead,
  plainPeer,
  type NodeObject,
  type ObjectHead,
  type PeerObject,
} from './schema.js';
import { parseSpoke, parseUnreachable, relayRole } from './relay-annotations.js';
import type { Endpoint, KiloNode, KiloPeer, LeaderHealthReport, RelayRole } from './types.js';

/** The parts of a Kubernetes object that Kilo reads. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    annotations?: Record<string, string> | null;
    labels?: Record<string, string> | null;
    resourceVersion?: string;
  };
  spec?: Record<string, unknown>;
}

export interface ParseOptions {
  topologyLabel?: string;
  /**
   * What each object parsed to, kept by a caller that parses the same objects again and again (the
   * agent, whose cache hands out an unchanged object as the same object): one of those is not parsed
   * again. Keep one memo per set of the other options.
   */
  memo?: ParseMemoLike;
}

/** What parseCluster asks of a memo: a WeakMap does, and so does the agent's (agent/parse-memo.ts). */
export interface ParseMemoLike {
  get(obj: object): ParsedObject | undefined;
  set(obj: object, parsed: ParsedObject): unknown;
}

/** What one object of a cluster parsed to; other kinds are ignored. */
export type ParsedObject =
  { kind: 'Node'; parsed: Parsed<KiloNode> } | { kind: 'Peer'; parsed: Parsed<KiloPeer> } | { kind: 'other' };

export type Parsed<T> = { ok: true; value: T } | { ok: false; errors: ValidationError[] };

/** Collects every problem of one object instead of stopping at the first, so one log line names them all. */
class Reader {
  /** Made on the first error: most objects have none. */
  private errors: ValidationError[] | null = null;
  /** The object's kind and name: put together only when something is wrong (most objects are fine). */
  constructor(
    private readonly kind: string,
    private readonly name: string,
  ) {}

  fail(field: string, value: unknown, reason: string): null {
    // A list of 100,000 bad prefixes needs no 100,000 lines: the first few find the object.
    this.errors ??= [];
    if (this.errors.length < maxErrorsPerObject) {
      this.errors.push(new ValidationError(`${this.kind} ${JSON.stringify(this.name)}`, field, value, reason));
    }
    return null;
  }

  cidr(field: string, value: unknown, keepHostBits: boolean): Cidr | null {
    if (typeof value !== 'string') return this.fail(field, value, 'not a CIDR');
    const c = Cidr.tryParse(value.trim());
    if (!c) return this.fail(field, value, 'not a CIDR');
    return keepHostBits ? c : c.masked();
  }

  /**
   * A prefix the mesh routes into the tunnel: a catch-all (/0) would take every packet of every
   * node with it, so it is refused here, where the webhook can refuse it too.
   */
  routable(field: string, value: unknown): Cidr | null {
    const c = this.cidr(field, value, false);
    if (c && c.prefix === 0)
      return this.fail(field, value, 'a catch-all prefix would route all traffic into the tunnel');
    return c;
  }

  /** An address other hosts send to: not the unspecified address (0.0.0.0, ::). */
  address(field: string, value: unknown): Cidr | null {
    const c = this.cidr(field, value, true);
    if (c && c.ip.isUnspecified()) return this.fail(field, value, 'the unspecified address is no address');
    return c;
  }

  ip(field: string, value: string): IP | null {
    return IP.tryParse(value) ?? this.fail(field, value, 'not an IP address');
  }

  key(field: string, value: unknown): string | null {
    if (typeof value !== 'string' || !isWireGuardKey(value)) {
      return this.fail(field, value, 'not a WireGuard key (base64 of 32 bytes)');
    }
    return value;
  }

  /** A whole number of seconds: a keepalive (at most a day) or a unix timestamp. */
  seconds(field: string, value: unknown, max = 86_400): number | null {
    const text = typeof value === 'number' ? String(value) : typeof value === 'string' ? value.trim() : null;
    // Every node's last-seen: matched and converted natively (half the instructions of a loop).
    const n = text !== null && upTo12Digits.test(text) ? Number(text) : NaN;
    if (!(n <= max)) return this.fail(field, value, `not a whole number of seconds between 0 and ${max}`);
    return n;
  }

  endpoint(field: string, value: unknown): Endpoint | null {
    if (typeof value !== 'string') return this.fail(field, value, 'not an endpoint (host:port)');
    const e = parseEndpoint(value.trim());
    if (!e) return this.fail(field, value, 'not an endpoint (ip:port, [ipv6]:port or dns-name:port)');
    return e;
  }

  result<T>(value: T): Parsed<T> {
    return this.errors === null ? { ok: true, value } : { ok: false, errors: this.errors };
  }
}

const upTo12Digits = /^[0-9]{1,12}$/;

/**
 * One to `maxDigits` decimal digits from `from` to the end of `text`, as their number; else NaN.
 * Not a regular expression and Number(): docs/performance.md#parsing.
 */
function decimal(text: string, from: number, maxDigits: number): number {
  const digits = text.length - from;
  if (digits < 1 || digits > maxDigits) return NaN;
  let n = 0;
  for (let i = from; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) return NaN;
    n = n * 10 + c - 48;
  }
  return n;
}

/**
 * 43 base64 characters and one '=' decode to exactly 32 bytes, WireGuard's key length: nothing to
 * decode. A regular expression, not a loop over the characters: docs/performance.md#parsing.
 */
const wireGuardKey = /^[A-Za-z0-9+/]{43}=$/;

export function isWireGuardKey(value: string): boolean {
  return value.length === 44 && wireGuardKey.test(value);
}

const maxErrorsPerObject = 5;

const dnsName =
  /^(?=.{1,253}$)([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*\.?$/;

/**
 * A DNS name to resolve. A last label of digits ("1.2.3.4.5", "0x1.2.3.4") is a mistyped address,
 * not a name (RFC 1123 §2.1: a top-level label is never all-numeric), and a resolver would try it.
 */
export function isDNSName(host: string): boolean {
  if (!dnsName.test(host)) return false;
  const labels = host.replace(/\.$/, '').split('.');
  return !/^\d+$/.test(labels[labels.length - 1]!);
}

/** One to five digits from `from` to the end, 1 to 65535; else null. */
function parsePort(text: string, from: number): number | null {
  const port = decimal(text, from, 5);
  return port >= 1 && port <= 65535 ? port : null;
}

/** Parses `ip:port`, `[ipv6]:port` or `dns-name:port`. */
export function parseEndpoint(value: string): Endpoint | null {
  if (value.startsWith('[')) {
    const close = value.indexOf(']');
    if (close < 0 || value[close + 1] !== ':') return null;
    const ip = IP.tryParse(value.slice(1, close));
    const port = parsePort(value, close + 2);
    return ip && ip.family === 6 && port ? { ip, dns: null, port } : null;
  }
  const colon = value.lastIndexOf(':');
  if (colon <= 0) return null;
  const port = parsePort(value, colon + 1);
  if (!port) return null;
  const host = value.slice(0, colon);
  const ip = IP.tryParse(host);
  if (ip) return ip.family === 4 ? { ip, dns: null, port } : null;
  // A name made only of digits and dots is a mistyped address, not a DNS name.
  if (!isDNSName(host)) return null;
  return { ip: null, dns: host, port };
}

export function formatEndpoint(e: Endpoint): string {
  if (e.ip) return e.ip.family === 6 ? `[${e.ip.text}]:${e.port}` : `${e.ip.text}:${e.port}`;
  return `${e.dns}:${e.port}`;
}

const annotationFields = new Map<string, string>();

/** `metadata.annotations["<key>"]`, built once per key rather than per node. */
function field(key: string): string {
  let f = annotationFields.get(key);
  if (f === undefined) annotationFields.set(key, (f = `metadata.annotations["${key}"]`));
  return f;
}

const none: readonly Cidr[] = Object.freeze([]);
const noEndpoints: ReadonlyMap<string, Endpoint> = new Map();

/** A location is a name shown in graphs and logs and used as a key: printable text only. */
const printable = /^[^\u0000-\u001f\u007f]{0,253}$/;

/**
 * Parses a Node object into Kilo's view of it; a malformed value drops the whole node. Any value
 * is accepted as input: the shape is checked (schema.ts) before anything is read.
 */
export function parseNode(input: unknown, options: ParseOptions = {}): Parsed<KiloNode> {
  const shape = plainNode(input) ? null : checkShape(nodeShape, input, objectLabel('Node', input));
  if (shape && !shape.ok) return shape;
  const obj = shape ? shape.value : (input as NodeObject);
  const name = obj.metadata.name;
  const r = new Reader('Node', name);
  const a = obj.metadata.annotations ?? {};
  const labels = obj.metadata.labels ?? {};

  const topologyLabel = options.topologyLabel ?? defaultTopologyLabel;
  const hasLabel = Object.hasOwn(labels, topologyLabel);
  const location = Object.hasOwn(a, Annotation.location)
    ? a[Annotation.location]!
    : hasLabel
      ? labels[topologyLabel]!
      : '';
  if (!printable.test(location)) {
    r.fail(
      Object.hasOwn(a, Annotation.location) ? field(Annotation.location) : `metadata.labels["${topologyLabel}"]`,
      location,
      'a location is at most 253 printable characters',
    );
  }

  let endpoint: Endpoint | null = null;
  if (a[Annotation.forceEndpoint]) {
    endpoint = r.endpoint(field(Annotation.forceEndpoint), a[Annotation.forceEndpoint]);
  } else if (a[Annotation.endpoint]) {
    endpoint = r.endpoint(field(Annotation.endpoint), a[Annotation.endpoint]);
  }
  if (endpoint?.ip?.isLinkLocal()) {
    const key = a[Annotation.forceEndpoint] ? Annotation.forceEndpoint : Annotation.endpoint;
    endpoint = r.fail(field(key), a[key], linkLocal);
  }

  // Most nodes have one family: the IPv6 annotations are looked at only when one is there. The
  // agent-written ones count only on a node whose pods have IPv6 (ipv6-pods.ts); the operator's stand.
  const ipv6Endpoint =
    a[Annotation.forceEndpointIPv6] || (a[Annotation.endpointIPv6] && !lostIPv6Pods(obj.spec))
      ? readIPv6Endpoint(r, a, endpoint)
      : null;

  let internalIP: Cidr | null = null;
  const forced = Object.hasOwn(a, Annotation.forceInternalIP);
  if (forced) {
    const v = a[Annotation.forceInternalIP]!.trim();
    if (v !== '' && v !== '-') internalIP = r.address(field(Annotation.forceInternalIP), v);
  } else if (a[Annotation.internalIP]) {
    internalIP = r.address(field(Annotation.internalIP), a[Annotation.internalIP]);
  }
  if (internalIP?.ip.isLinkLocal())
    internalIP = r.fail(
      field(forced ? Annotation.forceInternalIP : Annotation.internalIP),
      internalIP.toString(),
      linkLocal,
    );
  const internalIPs =
    Object.hasOwn(a, Annotation.forceInternalIPv6) || (a[Annotation.internalIPv6] && !lostIPv6Pods(obj.spec))
      ? readIPv6InternalIP(r, a, internalIP, forced)
      : single(internalIP);

  const key = a[Annotation.key] ? r.key(field(Annotation.key), a[Annotation.key]) : null;
  const lastSeen = a[Annotation.lastSeen]
    ? r.seconds(field(Annotation.lastSeen), a[Annotation.lastSeen], Number.MAX_SAFE_INTEGER)
    : null;
  const podCIDRs = obj.spec ? parsePodCIDRs(r, obj.spec) : noValues;
  const persistentKeepalive = a[Annotation.persistentKeepalive]
    ? (r.seconds(field(Annotation.persistentKeepalive), a[Annotation.persistentKeepalive]) ?? 0)
    : 0;

  // Most nodes have neither: they share one empty list and one empty map.
  let allowedLocationIPs: readonly Cidr[] = none;
  const alips = a[Annotation.allowedLocationIPs];
  if (alips) {
    const list: Cidr[] = [];
    for (const part of alips.split(',')) {
      if (part.trim() === '') continue;
      const c = r.routable(field(Annotation.allowedLocationIPs), part);
      if (c) list.push(c);
      else break;
    }
    allowedLocationIPs = list;
  }

  let discoveredEndpoints: ReadonlyMap<string, Endpoint> = noEndpoints;
  const de = a[Annotation.discoveredEndpoints];
  const de6 = a[Annotation.discoveredEndpointsIPv6] && !lostIPv6Pods(obj.spec);
  if (de || de6) {
    const found = new Map<string, Endpoint>();
    if (de) parseDiscoveredEndpoints(r, field(Annotation.discoveredEndpoints), de, found);
    // Where WireGuard saw a peer over IPv6 on a node whose Kilo annotation keeps IPv4 ones
    // (agent/roaming.ts): one node sees one endpoint per peer, so the two never name one key twice.
    if (de6) {
      const text = a[Annotation.discoveredEndpointsIPv6]!;
      parseDiscoveredEndpoints(r, field(Annotation.discoveredEndpointsIPv6), text, found, 6);
    }
    discoveredEndpoints = found;
  }

  const wg = a[Annotation.wireGuardIP];
  const wireGuardIP = wg ? r.cidr(field(Annotation.wireGuardIP), wg, true) : null;
  const wg6 = a[Annotation.wireGuardIPv6];
  const wireGuardIPv6 = wg6 ? readIPv6WireGuardIP(r, wg6, wireGuardIP) : null;
  const forceWireGuardIP = parseForcedWireGuardIP(r, a[Annotation.forceWireGuardIP]);

  // Kilo writes a bare address, or "" when the node has none (not in cilium mode); Kilo's name
  // first, then the contract's (see Annotation.cniCompatibilityIP).
  const ciliumField = a[Annotation.ciliumInternalIP]?.trim()
    ? Annotation.ciliumInternalIP
    : a[Annotation.cniCompatibilityIP]?.trim()
      ? Annotation.cniCompatibilityIP
      : undefined;
  const ciliumInternalIP = ciliumField ? r.ip(field(ciliumField), a[ciliumField]!.trim()) : null;

  const lh = a[Annotation.leaderHealth];
  const leaderHealth = lh ? parseLeaderHealth(r, field(Annotation.leaderHealth), lh) : null;

  // kilo-ts's relays (docs/relays.md): set only when present, so other nodes read as before.
  const relayed: { relay?: RelayRole; unreachable?: readonly string[]; spoke?: true } = {};
  // Without an announcement there is no role (relayRole): no label made for an error that cannot come.
  const role = a[Annotation.meshFlags] === undefined ? undefined : relayRole(a, name);
  if (role instanceof ValidationError) r.fail(role.field, a[Annotation.relay], role.reason);
  else if (role !== undefined) relayed.relay = role;
  const ur = a[Annotation.unreachable];
  const unreachable = ur ? parseUnreachable(ur, `Node ${JSON.stringify(name)}`) : null;
  if (unreachable instanceof ValidationError) r.fail(unreachable.field, ur, unreachable.reason);
  else if (unreachable && unreachable.length > 0) relayed.unreachable = unreachable;
  const sp = a[Annotation.spoke];
  const spoke = sp === undefined ? false : parseSpoke(sp, `Node ${JSON.stringify(name)}`);
  if (spoke instanceof ValidationError) r.fail(spoke.field, sp, spoke.reason);
  else if (spoke) relayed.spoke = true;

  // No spread in this literal: see withRare.
  const node: KiloNode = {
    name,
    location,
    wantsLeader: Object.hasOwn(a, Annotation.leader),
    endpoint,
    internalIPs,
    key,
    lastSeen,
    podCIDRs,
    persistentKeepalive,
    allowedLocationIPs,
    discoveredEndpoints,
    wireGuardIP,
    forceWireGuardIP,
    granularity: a[Annotation.granularity] || null,
    ciliumInternalIP,
    leaderHealth,
  };
  const plain = !ipv6Endpoint && !wireGuardIPv6 && relayed.unreachable === undefined && !relayed.spoke;
  // Every node of a kilo-ts mesh has a relay role, and only that: added last, where withRare's
  // spread puts it, without a copy of the node.
  if (plain && relayed.relay !== undefined) (node as { relay?: RelayRole }).relay = relayed.relay;
  return r.result(plain ? node : withRare(node, ipv6Endpoint, wireGuardIPv6, relayed));
}

/**
 * A node with the fields few nodes have, in the order a spread in parseNode's literal put them:
 * ipv6Endpoint after endpoint, wireGuardIPv6 after wireGuardIP, the relay fields last. The common
 * node's literal has no spread: it cost an eighth of parsing a 5,000-node snapshot
 * (docs/performance.md#parsing).
 */
function withRare(
  node: KiloNode,
  ipv6Endpoint: Endpoint | null,
  wireGuardIPv6: Cidr | null,
  relayed: Partial<KiloNode>,
): KiloNode {
  if (!ipv6Endpoint && !wireGuardIPv6) return { ...node, ...relayed };
  const { name, location, wantsLeader, endpoint, ...middle } = node;
  // What follows wireGuardIP; the rest (internalIPs to wireGuardIP) keeps its order.
  const { forceWireGuardIP, granularity, ciliumInternalIP, leaderHealth, ...upToWireGuardIP } = middle;
  return {
    name,
    location,
    wantsLeader,
    endpoint,
    ...(ipv6Endpoint ? { ipv6Endpoint } : {}),
    ...upToWireGuardIP,
    ...(wireGuardIPv6 ? { wireGuardIPv6 } : {}),
    forceWireGuardIP,
    granularity,
    ciliumInternalIP,
    leaderHealth,
    ...relayed,
  };
}

/**
 * force-wireguard-ip: an address, or one with a mask as the wireguard-ip annotation writes it (the
 * mask is --subnet's business, so it is ignored). "" or "-" is none, as for force-internal-ip.
 */
function parseForcedWireGuardIP(r: Reader, value: string | undefined): IP | null {
  const v = value?.trim();
  if (!v || v === '-') return null;
  const f = field(Annotation.forceWireGuardIP);
  return v.includes('/') ? (r.address(f, v)?.ip ?? null) : r.ip(f, v);
}

/**
 * spec.podCIDRs (one per family, as Kubernetes allows), else spec.podCIDR. Kubernetes keeps
 * podCIDR equal to podCIDRs[0]: a node whose two disagree is dropped rather than guessed at.
 */
function parsePodCIDRs(r: Reader, spec: NonNullable<NodeObject['spec']>): ByFamily<Cidr> {
  const podCIDR = spec.podCIDR;
  const list = spec.podCIDRs;
  if (!list || list.length === 0) return podCIDR ? single(r.routable('spec.podCIDR', podCIDR)) : noValues;
  if (list.length > 2) {
    r.fail('spec.podCIDRs', list, 'at most one pod CIDR per family (IPv4, IPv6)');
    return noValues;
  }
  const first = r.routable('spec.podCIDRs[0]', list[0]);
  if (!first) return noValues;
  // Equal as written on every node Kubernetes made: no second parse.
  const alone = podCIDR && podCIDR !== list[0] ? r.routable('spec.podCIDR', podCIDR) : null;
  if (alone && alone.networkText !== first.networkText) {
    r.fail('spec.podCIDR', podCIDR, `differs from spec.podCIDRs[0] ${JSON.stringify(list[0])}`);
  }
  if (list.length === 1) return [first];
  const second = r.routable('spec.podCIDRs[1]', list[1]);
  const both = second && pair(first, second);
  if (second && !both) {
    r.fail('spec.podCIDRs[1]', list[1], `of the family of spec.podCIDRs[0] ${JSON.stringify(list[0])}: one per family`);
  }
  return both ?? noValues;
}

function parseLeaderHealth(r: Reader, field: string, text: string): LeaderHealthReport | null {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return r.fail(field, text, 'not valid JSON');
  }
  const o = (typeof json === 'object' && json !== null ? json : {}) as Record<string, unknown>;
  const term = typeof o['term'] === 'string' && /^\d{4}-\d\d-\d\dT/.test(o['term']) ? Date.parse(o['term']) : NaN;
  if (typeof o['leader'] !== 'string' || o['leader'] === '' || Number.isNaN(term))
    return r.fail(field, text, 'not a JSON object {"leader": node name, "term": RFC 3339 time}');
  return { leader: o['leader'], term };
}

const linkLocal = 'a link-local address is valid on one link only: never an internal IP or an endpoint';

/**
 * The node's IPv6 endpoint beside Kilo's annotation (force-endpoint-ipv6, else endpoint-ipv6):
 * `[ipv6]:port` only, and only when Kilo's endpoint is not IPv6 already (one per family).
 */
function readIPv6Endpoint(r: Reader, a: Record<string, string>, kilo: Endpoint | null): Endpoint | null {
  const key = a[Annotation.forceEndpointIPv6] ? Annotation.forceEndpointIPv6 : Annotation.endpointIPv6;
  const value = a[key]!;
  const e = r.endpoint(field(key), value);
  if (!e) return null;
  if (e.ip?.family !== 6) return r.fail(field(key), value, 'not an IPv6 endpoint ([ipv6]:port): one per family');
  if (e.ip.isLinkLocal()) return r.fail(field(key), value, linkLocal);
  if (kilo?.ip?.family === 6)
    return r.fail(field(key), value, `a second IPv6 endpoint beside ${formatEndpoint(kilo)}: one per family`);
  return e;
}

/**
 * The internal IPs with the IPv6 one beside Kilo's (force-internal-ip-ipv6, else internal-ip-ipv6):
 * an IPv6 address with its mask, only when Kilo's is not IPv6 already. A Kilo force-internal-ip of
 * ""/"-" (no internal IP) holds for both families unless force-internal-ip-ipv6 gives one.
 */
function readIPv6InternalIP(r: Reader, a: Record<string, string>, kilo: Cidr | null, forced: boolean): ByFamily<Cidr> {
  let key: string = Annotation.internalIPv6;
  if (Object.hasOwn(a, Annotation.forceInternalIPv6)) key = Annotation.forceInternalIPv6;
  else if (forced && !kilo) return noValues;
  const value = a[key]!.trim();
  if (value === '' || value === '-') return single(kilo);
  const c = r.address(field(key), value);
  if (!c) return noValues;
  if (c.family !== 6) r.fail(field(key), value, 'not an IPv6 address with its mask: one per family');
  else if (c.ip.isLinkLocal()) r.fail(field(key), value, linkLocal);
  else if (kilo?.family === 6)
    r.fail(field(key), value, `a second IPv6 internal IP beside ${kilo.toString()}: one per family`);
  return kilo ? (pair(kilo, c) ?? noValues) : [c];
}

/**
 * wireguard-ip-ipv6, what a dual-stack agent publishes beside Kilo's wireguard-ip (its segment's
 * IPv6 WireGuard IP with the subnet's mask): an IPv6 one. Beside an IPv6 Kilo annotation it is
 * left from the mesh's dual-stack days (an agent of one family leaves the -ipv6 annotations
 * alone), so Kilo's, the agent's current word, stands and this one is not read.
 */
function readIPv6WireGuardIP(r: Reader, value: string, kilo: Cidr | null): Cidr | null {
  const f = field(Annotation.wireGuardIPv6);
  const c = r.cidr(f, value, true);
  if (!c) return null;
  if (c.family !== 6) return r.fail(f, value, 'not an IPv6 address with its mask: one per family');
  return kilo?.family === 6 ? null : c;
}

function parseDiscoveredEndpoints(
  r: Reader,
  field: string,
  text: string,
  into: Map<string, Endpoint>,
  family?: 6,
): void {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    r.fail(field, text, 'not valid JSON');
    return;
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    r.fail(field, text, 'not a JSON object of public key to {"IP", "Port"}');
    return;
  }
  for (const [key, v] of Object.entries(json as Record<string, unknown>)) {
    if (!isWireGuardKey(key)) {
      r.fail(field, key, 'not a WireGuard key (base64 of 32 bytes)');
      continue;
    }
    const e = v as { IP?: unknown; Port?: unknown } | null;
    const ip = typeof e?.IP === 'string' ? IP.tryParse(e.IP) : null;
    const port =
      typeof e?.Port === 'number' && Number.isInteger(e.Port) && e.Port >= 1 && e.Port <= 65535 ? e.Port : null;
    if (!ip || !port) {
      r.fail(`${field}[${JSON.stringify(key)}]`, v, 'not an endpoint {"IP": "<ip>", "Port": <1-65535>}');
      continue;
    }
    if (family && ip.family !== family) {
      r.fail(`${field}[${JSON.stringify(key)}]`, v, 'not an IPv6 endpoint');
      continue;
    }
    if (!into.has(key)) into.set(key, { ip, dns: null, port });
  }
}

/** Parses a Peer; a Peer must name at least one allowed IP and a public key. Any value is accepted as input. */
export function parsePeer(input: unknown): Parsed<KiloPeer> {
  const shape = plainPeer(input) ? null : checkShape(peerShape, input, objectLabel('Peer', input));
  if (shape && !shape.ok) return shape;
  const obj = shape ? shape.value : (input as PeerObject);
  const name = obj.metadata.name;
  const r = new Reader('Peer', name);
  const spec = obj.spec;

  const allowedIPs: Cidr[] = [];
  for (const [i, v] of spec.allowedIPs.entries()) {
    const c = r.routable(`spec.allowedIPs[${i}]`, v);
    if (c) allowedIPs.push(c);
    else break;
  }

  const publicKey = r.key('spec.publicKey', spec.publicKey);

  let endpoint: Endpoint | null = null;
  const ep = spec.endpoint;
  if (ep) {
    const port = Number.isInteger(ep.port) && ep.port >= 1 && ep.port <= 65535 ? ep.port : null;
    if (!port) r.fail('spec.endpoint.port', ep.port, 'not a port (1-65535)');
    const dnsOrIP = ep.dnsOrIP ?? {};
    if (dnsOrIP.ip) {
      const ip = IP.tryParse(dnsOrIP.ip);
      if (!ip) r.fail('spec.endpoint.dnsOrIP.ip', dnsOrIP.ip, 'not an IP address');
      else if (ip.isUnspecified())
        r.fail('spec.endpoint.dnsOrIP.ip', dnsOrIP.ip, 'the unspecified address is no address');
      else if (port) endpoint = { ip, dns: null, port };
    } else if (dnsOrIP.dns) {
      if (!isDNSName(dnsOrIP.dns)) r.fail('spec.endpoint.dnsOrIP.dns', dnsOrIP.dns, 'not a DNS name');
      else if (port) endpoint = { ip: null, dns: dnsOrIP.dns, port };
    } else {
      r.fail('spec.endpoint.dnsOrIP', ep.dnsOrIP ?? null, 'needs dns or ip');
    }
  }

  const ka = spec.persistentKeepalive;
  const persistentKeepalive = ka === undefined || ka === null ? 0 : (r.seconds('spec.persistentKeepalive', ka) ?? 0);

  const psk = spec.presharedKey;
  const presharedKey = psk ? r.key('spec.presharedKey', psk) : null;

  return r.result<KiloPeer>({
    name,
    allowedIPs,
    publicKey: publicKey ?? '',
    endpoint,
    persistentKeepalive,
    presharedKey,
  });
}

export function isPeerKind(obj: { kind?: unknown; apiVersion?: unknown }): boolean {
  return obj.kind === 'Peer' && typeof obj.apiVersion === 'string' && obj.apiVersion.startsWith('kilo.squat.ai/');
}

export interface ParsedCluster {
  nodes: KiloNode[];
  peers: KiloPeer[];
  /** One entry per rejected value; each names its object, field and value. */
  errors: ValidationError[];
}

/**
 * Splits a list of Nodes and Peers into valid objects and errors; other kinds are ignored. Takes
 * anything: an entry that is not an object with a string kind and apiVersion is an error too.
 */
export function parseCluster(objects: readonly unknown[], options: ParseOptions = {}): ParsedCluster {
  const out: ParsedCluster = { nodes: [], peers: [], errors: [] };
  const memo = options.memo;
  for (let i = 0; i < objects.length; i++) {
    const obj = objects[i];
    let o = memo && typeof obj === 'object' && obj !== null ? memo.get(obj) : undefined;
    if (o === undefined) {
      // The quick yes is the object itself: no wrapper per object of a big list.
      let head: ObjectHead;
      if (plainObjectHead(obj)) head = obj;
      else {
        const checked = checkShape(objectShape, obj, `object #${i + 1}`);
        if (!checked.ok) {
          // Not remembered: the error names the object by its place in the list.
          out.errors.push(...checked.errors);
          continue;
        }
        head = checked.value;
      }
      if (head.kind === 'Node') {
        const parsed = parseNode(obj, options);
        // Without a memo, straight into the lists: no record per object.
        if (!memo) {
          if (parsed.ok) out.nodes.push(parsed.value);
          else out.errors.push(...parsed.errors);
          continue;
        }
        o = { kind: 'Node', parsed };
      } else if (isPeerKind(head)) o = { kind: 'Peer', parsed: parsePeer(obj) };
      else o = { kind: 'other' };
      memo?.set(obj as object, o);
    }
    if (o.kind === 'other') continue;
    if (!o.parsed.ok) out.errors.push(...o.parsed.errors);
    else if (o.kind === 'Node') out.nodes.push(o.parsed.value);
    else out.peers.push(o.parsed.value);
  }
  out.nodes = uniquelyNamed('Node', out.nodes, out.errors);
  out.peers = uniquelyNamed('Peer', out.peers, out.errors);
  return out;
}

/**
 * Two objects of one kind with one name exist only in a hand-made snapshot; no order can tell which
 * is real, so all of them drop out (before readiness, so the answer does not depend on file order).
 */
function uniquelyNamed<T extends { name: string }>(kind: string, objects: T[], errors: ValidationError[]): T[] {
  // Lists come from the API server (and snapshots of it) in name order: then one look at each
  // neighbour tells.
  let ascending = true;
  for (let i = 1; i < objects.length && ascending; i++) ascending = objects[i - 1]!.name < objects[i]!.name;
  if (ascending) return objects;
  const count = new Map<string, number>();
  for (const o of objects) count.set(o.name, (count.get(o.name) ?? 0) + 1);
  if (count.size === objects.length) return objects;
  for (const [name, n] of count) {
    if (n > 1)
      errors.push(
        new ValidationError(`${kind} ${JSON.stringify(name)}`, 'metadata.name', name, `${n} objects share the name`),
      );
  }
  return objects.filter((o) => count.get(o.name) === 1);
}
