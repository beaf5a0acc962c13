import type { Cidr, IP } from '../net/cidr.js';
import { ofFamily } from '../net/family.js';
import { formatEndpoint } from '../model/parse.js';
import type { Endpoint, KiloNode, KiloPeer } from '../model/types.js';
import { encapsulatorOf, type Encapsulator } from '../encapsulation/index.js';
import { cutOffFollowers } from './cut-off.js';
import { endpointFor } from './endpoint-family.js';
import { planFirewall } from './firewall.js';
import { planGuard } from './guard.js';
import { withRelays } from './relay-plan.js';
import type { MeshOptions } from './options.js';
import { effectiveEndpoint, groupSegments, remoteSegments, type Segment, type Topology } from './topology.js';
import type { PlanMemo } from './plan-memo.js';
import {
  hostTable,
  kiloTable,
  wireGuardMark,
  type Plan,
  type PlanPeer,
  type PlanRoute,
  type PlanRule,
} from './types.js';

// The loops over segments and their nodes are index loops: cold code (docs/performance.md#cold-code).

/**
 * One node's desired state, from the topology as that node sees it. Pure. `enc` is the plan's part
 * of the encapsulation the options choose (whoever programs the machine passes the part of the same
 * choice it runs the devices of).
 */
export function planNode(
  t: Topology,
  options: MeshOptions,
  enc: Encapsulator = encapsulatorOf(options),
  memo?: PlanMemo,
): Plan {
  const { node, leader } = t.local;
  const routing: Routing & { segmentPeers?: PlanPeer[] } = leader
    ? leaderRoutes(t, options, enc, memo)
    : followerRoutes(t, options, enc);
  // With the mask of the mesh subnet of each address's family.
  const wireGuardIPs = leader
    ? t.local.segment.wireGuardIPs.map((ip) => `${ip.text}/${ofFamily(t.subnets, ip.family)!.prefix}`)
    : [];
  const plan: Plan = {
    node: node.name,
    granularity: t.granularity,
    encapsulate: options.encapsulate,
    leader,
    segment: {
      leader: t.local.segment.leader.name,
      nodes: t.local.segment.nodes.map((n) => n.name),
      leaderReason: t.local.segment.leaderReason,
    },
    wireGuardIP: wireGuardIPs.length > 0 ? wireGuardIPs[0]! : null,
    // Only with two families: the plan of one family is Kilo's.
    ...(wireGuardIPs.length > 1 ? { wireGuardIPs } : {}),
    listenPort: node.endpoint?.port ?? options.port,
    fwmark: leader && options.routeHostTraffic ? wireGuardMark : null,
    privateKey: { path: options.privateKeyPath },
    interfaceUp: leader,
    peers: leader ? wireGuardPeers(t, routing.segmentPeers ?? []) : [],
    routes: routing.routes,
    rules: routing.rules,
    firewall: planFirewall(t, options, enc),
    guard: planGuard(routing.routes, wireGuardIPs),
  };
  const cutOff = cutOffFollowers(t.local.segment, enc);
  if (cutOff.length > 0) plan.cutOff = cutOff;
  // Pairs that cannot reach each other directly go through a relay (relay-plan.ts); none: the plan as is.
  return withRelays(plan, t, options);
}

function wireGuardPeers(t: Topology, segmentPeers: PlanPeer[]): PlanPeer[] {
  const keepalive = t.local.node.persistentKeepalive;
  for (const p of t.peers) segmentPeers.push(peerOf(t, p, keepalive));
  return segmentPeers;
}

/**
 * Each remote segment's peer (returned, in segment order) and routes through kilo (onto `routes`),
 * made together; with a memo, the last pass's where it holds them.
 */
function segmentParts(
  t: Topology,
  options: MeshOptions,
  enc: Encapsulator,
  routes: PlanRoute[],
  memo?: PlanMemo,
): PlanPeer[] {
  const self = t.local.node;
  const remote = remoteSegments(t);
  const peers = new Array<PlanPeer>(remote.length);
  memo?.begin(options, enc, self);
  for (let i = 0; i < remote.length; i++) {
    const s = remote[i]!;
    const e = effectiveEndpoint(
      t,
      endpointFor(self, s.leader),
      s.leader.key!,
      s.leader.persistentKeepalive,
      s.leader.location,
    );
    if (!memo) {
      peers[i] = segmentPart(t, options, s, e, routes);
      continue;
    }
    const part = memo.part(s, e, () => {
      const own: PlanRoute[] = [];
      return { peer: segmentPart(t, options, s, e, own), routes: own };
    });
    peers[i] = part.peer;
    for (let j = 0; j < part.routes.length; j++) routes.push(part.routes[j]!);
  }
  memo?.end();
  return peers;
}

/** A remote segment's WireGuard peer, and its routes through kilo onto `routes`; `e` the endpoint the local node dials. */
function segmentPart(t: Topology, options: MeshOptions, s: Segment, e: Endpoint | null, routes: PlanRoute[]): PlanPeer {
  const peer: PlanPeer = {
    kind: 'segment',
    names: s.nodes.map((n) => n.name),
    publicKey: s.leader.key!,
    endpoint: e ? formatEndpoint(e) : null,
    allowedIPs: s.allowedIPs.map((c) => c.networkText),
    persistentKeepalive: t.local.node.persistentKeepalive,
    presharedKey: null,
  };
  const own = t.local.node.internalIPs;
  const ruleBased = options.routeHostTraffic;
  const endpointIP = e?.ip;
  for (let j = 0; j < s.nodes.length; j++) {
    const n = s.nodes[j]!;
    for (let k = 0; k < n.podCIDRs.length; k++) routes.push(viaKilo(own, n.podCIDRs[k]!, s.wireGuardIPs));
    for (let k = 0; k < n.internalIPs.length; k++) {
      const internal = n.internalIPs[k]!.ip;
      const host = viaKilo(own, internal.toHostCidr(), s.wireGuardIPs);
      if (ruleBased) routes.push({ ...host, table: hostTable });
      // Without the mark, a node reachable only at its endpoint IP cannot be routed to through
      // the tunnel that carries its own packets.
      else if (!internal.equals(endpointIP)) routes.push(host);
    }
  }
  if (s.allowedLocationIPs.length > 0)
    for (const c of s.allowedLocationIPs) routes.push(viaKilo(own, c, s.wireGuardIPs));
  return peer;
}

/** A route through kilo from a leader with internal IPs `own`. */
function viaKilo(own: readonly Cidr[], dst: Cidr, segmentIPs: readonly IP[] | null): PlanRoute {
  // WireGuard picks the peer by allowed IPs, so the gateway is only a label: an IPv6 pod CIDR in
  // a cluster with an IPv4 WireGuard subnet goes without one (Linux has no IPv4 next hop for an
  // IPv6 route, and Kilo's route would be rejected).
  const gw = segmentIPs && ofFamily(segmentIPs, dst.family);
  // A source of the other family makes the route invalid (an IPv6 Peer IP in an IPv4 cluster).
  const src = ofFamily(own, dst.family);
  return {
    dst: dst.networkText,
    gw: gw ? gw.text : null,
    dev: 'kilo',
    src: src ? src.ip.text : null,
    table: 'main',
    onlink: !!gw,
  };
}

function peerOf(t: Topology, p: KiloPeer, keepalive: number): PlanPeer {
  const e = effectiveEndpoint(t, p.endpoint, p.publicKey, p.persistentKeepalive);
  return {
    kind: 'peer',
    names: [p.name],
    publicKey: p.publicKey,
    endpoint: e ? formatEndpoint(e) : null,
    allowedIPs: p.allowedIPs.map((c) => c.networkText),
    persistentKeepalive: keepalive,
    presharedKey: p.presharedKey,
  };
}

interface Routing {
  routes: PlanRoute[];
  rules: PlanRule[];
}

function viaPrivate(enc: Encapsulator, self: KiloNode, dst: Cidr, gw: IP): PlanRoute {
  return { dst: dst.networkText, gw: gw.text, dev: enc.deviceTo(self, gw), src: null, table: 'main', onlink: true };
}

/**
 * The route to `dst` over the private network towards `n`, whose gateway for the encapsulation is
 * `gw`. A destination of the other family (an IPv6 pod CIDR where mates meet over IPv4) goes in
 * the clear to `n`'s internal IP of that family: Linux has no IPv4 next hop for an IPv6 route, and
 * IPIP's tunl0 carries IPv4 only. A mate with no IPv4 internal IP (on an IPv6-only LAN) gets its
 * IPv4 destinations through its IPv6 one, which Linux takes (RFC 5549, `via inet6`, since 5.2).
 * None when `n` has neither.
 */
function toMate(enc: Encapsulator, self: KiloNode, n: KiloNode, dst: Cidr, gw: IP): PlanRoute | null {
  if (dst.family === gw.family && !offLan(self, n, gw)) return viaPrivate(enc, self, dst, gw);
  const own =
    onLan(self, ofFamily(n.internalIPs, dst.family)) ??
    (dst.family === 4 ? onLan(self, ofFamily(n.internalIPs, 6)) : null);
  if (!own) return null;
  return { dst: dst.networkText, gw: own.ip.text, dev: 'private', src: null, table: 'main', onlink: true };
}

/**
 * Whether `gw`, one of mate `n`'s internal IPs, is of a family `self` has no internal IP of (an
 * IPv6-only node beside a dual-stack mate, docs/dual-stack.md#edge-cases): `self` cannot reach it
 * on the LAN. A gateway of the CNI (flannel, cilium) is never judged so.
 */
function offLan(self: KiloNode, n: KiloNode, gw: IP): boolean {
  return !ofFamily(self.internalIPs, gw.family) && !!ofFamily(n.internalIPs, gw.family)?.ip.equals(gw);
}

/** A mate's internal IP when `self` has one of its family too (the LAN carries it), else null. */
function onLan(self: KiloNode, ip: Cidr | null): Cidr | null {
  return ip && ofFamily(self.internalIPs, ip.family) ? ip : null;
}

/** The routes by which a leader reaches its followers' pods through the encapsulation without --local (Cilium). */
function returnRoutes(t: Topology, enc: Encapsulator, out: Routing): void {
  if (!enc.returnsToFollowers) return;
  const self = t.local.node;
  for (const n of t.local.segment.nodes) {
    if (n === self) continue;
    for (const c of n.podCIDRs) {
      const route = toMate(enc, self, n, c, enc.segmentGateway(n));
      if (route) out.routes.push(route);
    }
  }
}

/**
 * Routes to the other members of the own group, in the clear over the private network; with
 * encapsulation also the table-1107 route and rules that send pod traffic through the tunnel.
 */
function localRoutes(t: Topology, options: MeshOptions, enc: Encapsulator, out: Routing, withKiloRule: boolean): void {
  if (!options.local) return;
  const self = t.local.node;
  const group = groupSegments(t);
  for (let i = 0; i < group.length; i++) {
    const nodes = group[i]!.nodes;
    for (let j = 0; j < nodes.length; j++) {
      const n = nodes[j]!;
      if (n === self || n.internalIPs.length === 0 || n.podCIDRs.length === 0) continue;
      const gw = enc.mateGateway(n);
      let tunnel = false;
      for (let k = 0; k < n.podCIDRs.length; k++) {
        const route = toMate(enc, self, n, n.podCIDRs[k]!, gw);
        if (!route) continue;
        out.routes.push(route);
        if (route.dev === 'tunnel') tunnel = true;
      }
      if (!tunnel) continue;
      const host = gw.toHostCidr().networkText;
      out.routes.push({ dst: host, gw: gw.text, dev: 'tunnel', src: null, table: kiloTable, onlink: true });
      const src = ofFamily(self.podCIDRs, gw.family);
      out.rules.push({ src: src ? src.networkText : null, dst: host, table: kiloTable, iif: null });
      if (withKiloRule) out.rules.push({ src: null, dst: host, table: kiloTable, iif: 'kilo' });
    }
  }
}

function leaderRoutes(
  t: Topology,
  options: MeshOptions,
  enc: Encapsulator,
  memo?: PlanMemo,
): Routing & { segmentPeers: PlanPeer[] } {
  const out: Routing = { routes: [], rules: [] };
  localRoutes(t, options, enc, out, true);
  returnRoutes(t, enc, out);
  const own = t.local.node.internalIPs;
  // Rule-based routing (wireguard.com/netns): WireGuard marks its own packets, and only unmarked
  // packets consult the table of internal-IP routes, so the tunnel's UDP to an endpoint that is
  // also an internal IP keeps following the main table.
  const ruleBased = options.routeHostTraffic;
  if (ruleBased) {
    out.rules.push({ src: null, dst: null, table: hostTable, iif: null, fwmark: wireGuardMark, invert: true });
  }
  const segmentPeers = segmentParts(t, options, enc, out.routes, memo);
  for (const p of t.peers) for (const c of p.allowedIPs) out.routes.push(viaKilo(own, c, null));
  return { ...out, segmentPeers };
}

/** A non-leader sends everything remote to its segment leader over the private network. */
function followerRoutes(t: Topology, options: MeshOptions, enc: Encapsulator): Routing {
  const out: Routing = { routes: [], rules: [] };
  const self = t.local.node;
  const leader = t.local.segment.leader;
  const gw = enc.segmentGateway(leader);
  const via = (dst: Cidr) => {
    const route = toMate(enc, self, leader, dst, gw);
    if (route) out.routes.push(route);
  };
  for (let i = 0; i < t.segments.length; i++) {
    const ips = t.segments[i]!.wireGuardIPs;
    for (let k = 0; k < ips.length; k++) via(ips[k]!.toHostCidr());
  }
  localRoutes(t, options, enc, out, false);
  const remote = remoteSegments(t);
  for (let i = 0; i < remote.length; i++) {
    const nodes = remote[i]!.nodes;
    for (let j = 0; j < nodes.length; j++)
      for (let k = 0; k < nodes[j]!.podCIDRs.length; k++) via(nodes[j]!.podCIDRs[k]!);
    for (let j = 0; j < nodes.length; j++)
      for (let k = 0; k < nodes[j]!.internalIPs.length; k++) via(nodes[j]!.internalIPs[k]!.ip.toHostCidr());
    for (const c of remote[i]!.allowedLocationIPs) via(c);
  }
  for (const p of t.peers) for (const c of p.allowedIPs) via(c);
  return out;
}

/** The WireGuard interface's addresses, one per family (the plan's wireGuardIP first); none on a non-leader. */
export function wireGuardAddresses(plan: Plan): string[] {
  return plan.wireGuardIPs ?? (plan.wireGuardIP === null ? [] : [plan.wireGuardIP]);
}
