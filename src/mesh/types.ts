import type { Encapsulate, Granularity } from '../model/types.js';
import type { LeaderReason } from './leaders.js';
import type { Firewall } from './firewall-types.js';

/** Interfaces a route can use, by role; the dataplane maps roles to real names (kilo0, eth0, tunl0). */
export type DeviceRole = 'kilo' | 'private' | 'tunnel';

/** Kilo's own routing table, for traffic that must be encapsulated. */
export const kiloTable = 1107;
/**
 * With --route-host-traffic: the routes to other nodes' internal IPs over WireGuard. Every packet
 * except WireGuard's own (marked with `wireGuardMark`) looks here first, so the tunnel's UDP to an
 * endpoint that is also an internal IP follows the main table instead of looping into the tunnel.
 */
export const hostTable = 1108;
/** The firewall mark of WireGuard's own packets with --route-host-traffic (0x453 = 1107). */
export const wireGuardMark = 0x453;
export type RouteTable = 'main' | typeof kiloTable | typeof hostTable;

export interface PlanRoute {
  dst: string;
  gw: string | null;
  dev: DeviceRole;
  src: string | null;
  table: RouteTable;
  onlink: boolean;
}

/**
 * A destination of the fail-closed guard (mesh/guard.ts): a drop route at the same destination and
 * table as a route through the WireGuard interface, one metric behind it, so that it carries the
 * traffic only while that route is gone (the interface deleted, wireguard-go dead).
 */
export interface PlanGuardRoute {
  dst: string;
  table: RouteTable;
}

export interface PlanRule {
  src: string | null;
  dst: string | null;
  table: typeof kiloTable | typeof hostTable;
  iif: 'kilo' | null;
  /** Matches packets with this firewall mark; absent = any mark. */
  fwmark?: number;
  /** `not`: the rule applies to the packets its selectors do not match. */
  invert?: boolean;
}

export interface PlanPeer {
  /** What this WireGuard peer stands for: a segment of nodes or a Peer object. */
  kind: 'segment' | 'peer';
  /** The segment's node names or the Peer's name. */
  names: string[];
  publicKey: string;
  endpoint: string | null;
  allowedIPs: string[];
  persistentKeepalive: number;
  presharedKey: string | null;
}

export type IPFamily = 4 | 6;

export type { Firewall, Masquerade, MasqueradeException, MasqueradeExceptionReason } from './firewall-types.js';

/** Everything the agent on one node programs: the desired state the dataplane converges to. */
export interface Plan {
  node: string;
  granularity: Granularity;
  encapsulate: Encapsulate;
  /**
   * The node runs its segment's WireGuard (Kilo's and the conformance vectors' name). In `full`,
   * `cross` and `subnet` every node is a segment of its own, so it is true on every node there:
   * `segment` says which case it is.
   */
  leader: boolean;
  /**
   * The node's segment: the nodes the rest of the mesh reaches through one WireGuard peer, and the
   * one of them that runs it. One node (itself) outside `location` granularity.
   */
  segment: {
    leader: string;
    nodes: string[];
    /** Why the leader leads: Kilo's annotation rule, a Lease, or the rule as the Lease's fallback. */
    leaderReason: LeaderReason;
  };
  /**
   * The interface address (WireGuard IP with the mesh mask; IPv4's when there are two families):
   * Kilo's field and value; null on a non-leader.
   */
  wireGuardIP: string | null;
  /** Every family's interface address, wireGuardIP's first; only when there are two (wireGuardAddresses). */
  wireGuardIPs?: string[];
  listenPort: number;
  /** Firewall mark of the WireGuard device's own packets (--route-host-traffic); null = none. */
  fwmark: number | null;
  /** Where the private key lives; the key itself never enters a plan. */
  privateKey: { path: string };
  /** Location granularity brings the WireGuard link down on non-leaders. */
  interfaceUp: boolean;
  peers: PlanPeer[];
  routes: PlanRoute[];
  rules: PlanRule[];
  /** The firewall as intent; a backend renders it (iptables today). */
  firewall: Firewall;
  /**
   * The fail-closed guard: where the tunnel's traffic is dropped rather than routed elsewhere while
   * the tunnel is away (docs/fail-closed.md). Absent = none (a plan made by hand, kgctl connect).
   */
  guard?: PlanGuardRoute[];
  /**
   * kilo-ts: the relayed pairs this node takes part in, as an end or as the relay (docs/relays.md);
   * absent when there are none, so a plan without relays is as before.
   */
  relays?: PlanRelay[];
  /**
   * kilo-ts: followers of this node's segment that share no LAN family with its leader, and so have
   * no route to it (mesh/cut-off.ts, docs/dual-stack.md#edge-cases); absent when there are none.
   */
  cutOff?: PlanCutOff[];
}

/** A follower and its leader with internal IPs of no common family: the follower is cut off. */
export interface PlanCutOff {
  node: string;
  leader: string;
  /** The follower's internal IPs' families, and the leader's (disjoint). */
  nodeFamilies: IPFamily[];
  leaderFamilies: IPFamily[];
}

/** A pair of nodes that cannot reach each other directly, and the node between them (null: none qualifies). */
export interface PlanRelay {
  pair: [string, string];
  via: string | null;
  /** Relayed because an end is a spoke (hub and spoke): no direct entry is kept. */
  spoke?: true;
}
