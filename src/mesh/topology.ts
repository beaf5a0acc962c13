import { Cidr, IP } from '../net/cidr.js';
import { ofFamily, type ByFamily } from '../net/family.js';
import type { ValidationError } from '../model/errors.js';
import { PrefixIndex } from '../net/prefix-index.js';
import { byName, inNameOrder } from './order.js';
import type { Endpoint, Granularity, KiloNode, KiloPeer } from '../model/types.js';
import type { ElectedLeaders, LeaderReason } from './leaders.js';
import { allocateSlots, type AllocationContext } from './allocation.js';

/**
 * A set of nodes that the rest of the mesh sees as one WireGuard peer: the leader's key and
 * endpoint, and allowed IPs covering every member.
 */
export interface Segment {
  /** Sort key and identity: `location:<name>` or `node:<name>`. */
  key: string;
  /** The group the segment belongs to: nodes of one group route to each other in the clear. */
  group: string;
  /** The human location (label or annotation), for graphs. */
  location: string;
  /** Members, by name. */
  nodes: KiloNode[];
  leader: KiloNode;
  /** Why the leader leads: Kilo's annotation rule, a Lease, or the rule as the Lease's fallback. */
  leaderReason: LeaderReason;
  /**
   * One per family of --subnet, IPv4's first: each subnet's address at the segment's slot
   * (allocation.ts), so the two correspond.
   */
  wireGuardIPs: ByFamily<IP>;
  /** After filtering (Kilo's rule): none overlaps an allowed IP, a Peer's, or a later segment's claim. */
  allowedLocationIPs: Cidr[];
  /** Each member's pod CIDRs and internal IPs (/32, /128), the WireGuard IPs (/32, /128), then allowed-location IPs. */
  allowedIPs: Cidr[];
}

export interface Topology {
  granularity: Granularity;
  /** Objects and allowed IPs left out by conflict resolution (conflicts.ts), each naming the earlier claimant. */
  conflicts?: ValidationError[];
  /** The WireGuard subnet, IPv4's when there are two. */
  subnet: Cidr;
  /** One WireGuard subnet per family, `subnet` first. */
  subnets: ByFamily<Cidr>;
  segments: Segment[];
  /** Ready Peers by name, each allowed IP claimed only by the first Peer that names it. */
  peers: KiloPeer[];
  /** Public key → discovered endpoint: the local node's first, then other nodes' in segment order. */
  discoveredEndpoints: Map<string, Endpoint>;
  local: {
    node: KiloNode;
    segment: Segment;
    /** True when the local node leads its segment (always outside location granularity). */
    leader: boolean;
  };
}

export class TopologyError extends Error {
  override name = 'TopologyError';
}

/**
 * The segments' keys, groups and members, in key order. A location segment (`location:<name>`)
 * holds its location's nodes; every other node is a segment of its own (`node:<name>`). Those keys
 * sort after every location key and among themselves by name, so only locations need a map and a
 * sort, not the thousands of one-node segments of cross, full and subnet. A location's group is
 * made once, not per node: the plan compares groups thousands of times, and one string compared
 * with itself is quick.
 */
function placeSegments(
  nodes: readonly KiloNode[],
  granularity: Granularity,
): { key: string; group: string; members: KiloNode[] }[] {
  const locations = new Map<string, string>();
  const locationKey = (name: string) => {
    let key = locations.get(name);
    if (key === undefined) locations.set(name, (key = `location:${name}`));
    return key;
  };
  const located = new Map<string, KiloNode[]>();
  const alone: KiloNode[] = [];
  for (let i = 0; i < nodes.length; i++) {
    const n = nodes[i]!;
    // A node without an internal IP cannot be reached over the private network, so it is a
    // group of its own in every granularity (Kilo leaves it isolated in cross).
    if (granularity !== 'location' || n.internalIPs.length === 0) alone.push(n);
    else {
      const members = located.get(n.location);
      if (members) members.push(n);
      else located.set(n.location, [n]);
    }
  }
  const out: { key: string; group: string; members: KiloNode[] }[] = [];
  // The default order is that of UTF-16 code units, as `<` compares keys.
  for (const location of [...located.keys()].sort()) {
    const key = locationKey(location);
    out.push({ key, group: key, members: located.get(location)!.sort(byName) });
  }
  const single = inNameOrder(alone);
  for (let i = 0; i < single.length; i++) {
    const n = single[i]!;
    const key = `node:${n.name}`;
    let group = key;
    // A node of two families is grouped by its first internal IP's subnet (IPv4's).
    const internal = n.internalIPs.length > 0 ? n.internalIPs[0]! : null;
    if (internal && granularity === 'cross') group = locationKey(n.location);
    else if (internal && granularity === 'subnet') group = `subnet:${n.location}/${internal.networkText}`;
    out.push({ key, group, members: [n] });
  }
  return out;
}

function isPublic(e: Endpoint | null): boolean {
  return !!e?.ip && !e.ip.isPrivate();
}

/** Kilo's leader rule: annotated with a public endpoint, else annotated, else public, else first. */
export function electLeader(nodes: readonly KiloNode[]): KiloNode {
  // One segment per node outside location granularity: nothing to elect, no list to filter.
  if (nodes.length === 1) return nodes[0]!;
  const annotated = nodes.filter((n) => n.wantsLeader);
  return (
    annotated.find((n) => isPublic(n.endpoint)) ?? annotated[0] ?? nodes.find((n) => isPublic(n.endpoint)) ?? nodes[0]!
  );
}

/**
 * WireGuard holds one peer per public key: a Peer reusing a node's key, or the key of a Peer
 * earlier by name, would make two entries fight over one peer. The node, else the first Peer, keeps it.
 */
export function uniqueKeys(peers: readonly KiloPeer[], nodes: readonly KiloNode[]): KiloPeer[] {
  if (peers.length === 0) return [];
  // Only the nodes' keys that some Peer names matter: a set of the few Peers' keys, looked up once
  // per node, not a set of 20,000 node keys made every pass.
  const wanted = new Set<string>();
  for (let i = 0; i < peers.length; i++) wanted.add(peers[i]!.publicKey);
  const taken = new Set<string>();
  for (let i = 0; i < nodes.length; i++) {
    const key = nodes[i]!.key;
    if (key && wanted.has(key)) taken.add(key);
  }
  return peers.filter((p) => {
    if (taken.has(p.publicKey)) return false;
    taken.add(p.publicKey);
    return true;
  });
}

/** Drops allowed IPs already claimed (as exact prefixes) by an earlier Peer by name. */
export function deduplicatePeerIPs(peers: readonly KiloPeer[]): KiloPeer[] {
  const seen = new Set<string>();
  return peers.map((p) => {
    const allowedIPs = p.allowedIPs.filter((c) => {
      const k = c.networkText;
      if (seen.has(k)) return false;
      seen.add(k);
      return true;
    });
    return allowedIPs.length === p.allowedIPs.length ? p : { ...p, allowedIPs };
  });
}

/**
 * Computes the mesh from the ready nodes and Peers, as seen from `hostname`. Pure: the same
 * objects give the same topology on every node. `leaders` (location → node, from a Lease
 * election) overrides Kilo's rule for the location segments whose member it names.
 */
export function buildTopology(
  nodes: readonly KiloNode[],
  peers: readonly KiloPeer[],
  granularity: Granularity,
  hostname: string,
  subnet: Cidr | ByFamily<Cidr>,
  leaders?: ElectedLeaders,
  allocation?: AllocationContext,
): Topology {
  const localNode = nodes.find((n) => n.name === hostname);
  if (!localNode) throw new TopologyError(`node ${JSON.stringify(hostname)} is not a ready node of the cluster`);

  const subnets: ByFamily<Cidr> = Array.isArray(subnet) ? (subnet as ByFamily<Cidr>) : [subnet as Cidr];
  const placed = placeSegments(nodes, granularity);
  for (const s of subnets) {
    if (BigInt(placed.length) >= s.size() - 1n) {
      throw new TopologyError(
        `the WireGuard subnet ${s.networkText} has too few addresses for ${placed.length} segments`,
      );
    }
  }

  const { slots, problems } = allocateSlots(placed, allocation);
  const segments: Segment[] = placed.map(({ key, group, members }, i) => {
    const chosen = key.startsWith('location:') ? leaders?.get(members[0]!.location) : undefined;
    const elected = chosen && members.find((n) => n.name === chosen.node);
    const leader = elected ?? electLeader(members);
    const leaderReason: LeaderReason = elected ? chosen.reason : 'annotation';
    // One slot, one address in each family's subnet: the two correspond.
    const wireGuardIPs = subnets.length === 1 ? [subnets[0]!.nth(slots[i]!)!] : slotIn(subnets, slots[i]!);
    const allowedIPs: Cidr[] = [];
    // Most nodes have no allowed-location IPs: no map for those (one segment per node in cross).
    let alips: Map<string, Cidr> | undefined;
    for (let j = 0; j < members.length; j++) {
      const n = members[j]!;
      for (let k = 0; k < n.podCIDRs.length; k++) allowedIPs.push(n.podCIDRs[k]!);
      for (let k = 0; k < n.internalIPs.length; k++) allowedIPs.push(n.internalIPs[k]!.ip.toHostCidr());
      if (n.allowedLocationIPs.length === 0) continue;
      for (const c of n.allowedLocationIPs) {
        alips ??= new Map();
        if (!alips.has(c.networkText)) alips.set(c.networkText, c);
      }
    }
    for (let k = 0; k < wireGuardIPs.length; k++) allowedIPs.push(wireGuardIPs[k]!.toHostCidr());
    return {
      key,
      group,
      location: leader.location,
      nodes: members,
      leader,
      leaderReason,
      wireGuardIPs,
      allowedLocationIPs: alips ? [...alips.values()] : [],
      allowedIPs,
    };
  });

  const readyPeers = deduplicatePeerIPs(uniqueKeys(inNameOrder(peers), nodes));
  filterAllowedLocationIPs(segments, readyPeers);

  const discoveredEndpoints = new Map<string, Endpoint>(localNode.discoveredEndpoints);
  // Most clusters have no node behind NAT: then there is nothing to walk.
  if (nodes.some((n) => n.discoveredEndpoints.size > 0)) {
    for (const s of segments) {
      for (const n of s.nodes) {
        for (const [k, e] of n.discoveredEndpoints) if (!discoveredEndpoints.has(k)) discoveredEndpoints.set(k, e);
      }
    }
  }

  const localSegment = segments.find((s) => s.nodes.includes(localNode))!;
  return {
    granularity,
    ...(problems.length > 0 ? { conflicts: problems } : {}),
    subnet: subnets[0]!,
    subnets,
    segments,
    peers: readyPeers,
    discoveredEndpoints,
    local: { node: localNode, segment: localSegment, leader: localSegment.leader === localNode },
  };
}

/** The address at `slot` in each subnet; a slot past a subnet's end is a TopologyError naming it. */
function slotIn(subnets: ByFamily<Cidr>, slot: number): IP[] {
  return subnets.map((s) => {
    const ip = s.nth(slot);
    if (!ip) throw new TopologyError(`the WireGuard subnet ${s.networkText} (--subnet) has no address at slot ${slot}`);
    return ip;
  });
}

/**
 * Kilo's rule for allowed-location IPs. A prefix overlapping any segment's allowed IPs (pod
 * CIDRs, internal IPs, WireGuard IPs) or any Peer's is dropped. Claims of different segments
 * that overlap are resolved in segment order, as Kilo resolves them: a segment's prefix is dropped
 * if it overlaps a claim still standing in another segment — earlier segments are already
 * filtered, later ones not yet — so of overlapping claims the one of the last segment (by key)
 * stands. An earlier claim overlapping a prefix was itself dropped for it, so "still standing"
 * reduces to "claimed by a later segment"; with two prefix indexes it costs O(n log n), not O(n²)
 * (docs/performance.md#allowed-location-ips). In mixed clusters agreement with Kilo beats symmetry.
 */
function filterAllowedLocationIPs(segments: Segment[], peers: readonly KiloPeer[]): void {
  // Most clusters have none: then there is nothing to index.
  if (segments.every((s) => s.allowedLocationIPs.length === 0)) return;
  const taken = new PrefixIndex(
    [...segments.flatMap((s) => s.allowedIPs), ...peers.flatMap((p) => p.allowedIPs)].map((cidr) => ({
      cidr,
      rank: 0,
    })),
  );
  const claims = new PrefixIndex(segments.flatMap((s, rank) => s.allowedLocationIPs.map((cidr) => ({ cidr, rank }))));
  segments.forEach((s, i) => {
    s.allowedLocationIPs = s.allowedLocationIPs.filter(
      (c) => claims.maxRankOverlapping(c) <= i && !taken.overlapsAny(c),
    );
    s.allowedIPs.push(...s.allowedLocationIPs);
  });
}

/**
 * The endpoint to dial for a target that roams behind NAT: where the local node's WireGuard saw
 * it; else, when the target is in the local node's location and announces a private endpoint on
 * the local node's own network, that endpoint (the two share the LAN behind one NAT: what the
 * other nodes saw is the NAT's public side, which a node behind it reaches only if the gateway
 * hairpins, and many do not); else where another node saw it. See docs/nat.md.
 */
export function effectiveEndpoint(
  t: Topology,
  endpoint: Endpoint | null,
  publicKey: string,
  persistentKeepalive: number,
  location?: string,
): Endpoint | null {
  if (persistentKeepalive <= 0) return endpoint;
  const seen = t.local.node.discoveredEndpoints.get(publicKey);
  if (seen) return seen;
  if (location !== undefined && onLocalNetwork(t.local.node, location, endpoint)) return endpoint;
  return t.discoveredEndpoints.get(publicKey) ?? endpoint;
}

function onLocalNetwork(local: KiloNode, location: string, e: Endpoint | null): boolean {
  const ip = e?.ip;
  return (
    !!ip && location === local.location && ip.isPrivate() && !!ofFamily(local.internalIPs, ip.family)?.contains(ip)
  );
}

/** The segments this node reaches over WireGuard: every segment outside its own group. */
export function remoteSegments(t: Topology): Segment[] {
  return t.segments.filter((s) => s.group !== t.local.segment.group);
}

/** The segments of the node's own group, its own included: reached in the clear. */
export function groupSegments(t: Topology): Segment[] {
  return t.segments.filter((s) => s.group === t.local.segment.group);
}
