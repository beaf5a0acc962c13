import type { Encapsulate, Granularity } from '../model/types.js';

/** Interfaces a route can use, by role; the dataplane maps roles to real names (kilo0, eth0, tunl0). */
export type DeviceRole = 'kilo' | 'private' | 'tunnel';

/** Kilo's own routing table, for traffic that must be encapsulated. */
export const kiloTable = 1107;
export type RouteTable = 'main' | typeof kiloTable;

export interface PlanRoute {
  dst: string;
  gw: string | null;
  dev: DeviceRole;
  src: string | null;
  table: RouteTable;
  onlink: boolean;
}

export interface PlanRule {
  src: string | null;
  dst: string | null;
  table: typeof kiloTable;
  iif: 'kilo' | null;
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
export type FirewallTable = 'nat' | 'filter';

/** A chain Kilo owns; the dataplane replaces it whole. */
export interface FirewallChain {
  family: IPFamily;
  table: FirewallTable;
  name: string;
}

/**
 * One iptables rule. Rules in Kilo's chains keep their order; rules in built-in chains
 * (POSTROUTING, INPUT, FORWARD) are jumps placed at the head ("prepend") or tail ("append").
 */
export interface FirewallRule {
  family: IPFamily;
  table: FirewallTable;
  chain: string;
  args: string[];
  comment: string;
  position: 'prepend' | 'append';
}

export interface Firewall {
  chains: FirewallChain[];
  rules: FirewallRule[];
}

/** Everything the agent on one node programs: the desired state the dataplane converges to. */
export interface Plan {
  node: string;
  granularity: Granularity;
  encapsulate: Encapsulate;
  leader: boolean;
  /** The interface address (WireGuard IP with the mesh mask); null on a non-leader. */
  wireGuardIP: string | null;
  listenPort: number;
  /** Where the private key lives; the key itself never enters a plan. */
  privateKey: { path: string };
  /** Location granularity brings the WireGuard link down on non-leaders. */
  interfaceUp: boolean;
  peers: PlanPeer[];
  routes: PlanRoute[];
  rules: PlanRule[];
  firewall: Firewall;
}
