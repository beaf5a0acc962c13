import type { Cidr, IP } from '../net/cidr.js';
import type { ByFamily } from '../net/family.js';

export const granularities = ['location', 'full', 'cross', 'subnet'] as const;
export type Granularity = (typeof granularities)[number];

export const encapsulations = ['never', 'crosssubnet', 'always'] as const;
export type Encapsulate = (typeof encapsulations)[number];

/** A WireGuard endpoint: an IP literal or a DNS name, and a UDP port. */
export interface Endpoint {
  /** The IP when the host is an address; null for a DNS name. */
  readonly ip: IP | null;
  /** DNS name when the host is not an address. */
  readonly dns: string | null;
  readonly port: number;
}

/** A Kubernetes Node as Kilo sees it, validated. */
export interface KiloNode {
  readonly name: string;
  /** "" when the node has no location. */
  readonly location: string;
  /** The leader annotation is present (any value). */
  readonly wantsLeader: boolean;
  /** force-endpoint when set, else the detected endpoint. */
  readonly endpoint: Endpoint | null;
  /**
   * A dual-stack node's IPv6 endpoint (force-endpoint-ipv6, else endpoint-ipv6) when `endpoint`,
   * Kilo's annotation, is of IPv4 or a DNS name; absent otherwise. mesh/endpoint-family.ts picks
   * the one a peer dials.
   */
  readonly ipv6Endpoint?: Endpoint;
  /**
   * force-internal-ip when set (none for "" or "-"), else the detected internal IP (Kilo's
   * annotation), and the IPv6 one of a dual-stack node (force-internal-ip-ipv6, else
   * internal-ip-ipv6): an address with its mask, at most one per family.
   */
  readonly internalIPs: ByFamily<Cidr>;
  readonly key: string | null;
  /** Unix seconds. */
  readonly lastSeen: number | null;
  /** spec.podCIDRs, else spec.podCIDR: at most one per family. */
  readonly podCIDRs: ByFamily<Cidr>;
  /** Seconds; 0 = not behind NAT. */
  readonly persistentKeepalive: number;
  readonly allowedLocationIPs: readonly Cidr[];
  /** Public key → where WireGuard on this node last saw that peer. */
  readonly discoveredEndpoints: ReadonlyMap<string, Endpoint>;
  /** The WireGuard IP the node published (Kilo's annotation, one address); the plan allocates its own. */
  readonly wireGuardIP: Cidr | null;
  /**
   * A dual-stack node's published IPv6 WireGuard IP (kilo.squat.ai/wireguard-ip-ipv6) when Kilo's
   * annotation holds the IPv4 one; absent otherwise. In `stable` mode a claim like Kilo's.
   */
  readonly wireGuardIPv6?: Cidr;
  /**
   * force-wireguard-ip: the address the operator wants for the node's segment (an address, or an
   * address with a mask, which is ignored); whether it is inside --subnet is the allocation's call.
   */
  readonly forceWireGuardIP: IP | null;
  readonly granularity: string | null;
  /**
   * The address of the node's `cilium_host` interface, published by its agent under
   * --compatibility=cilium: the outer destination of IPIP to this node through Cilium's overlay.
   */
  readonly ciliumInternalIP: IP | null;
  /** The node's complaint that its probes through its location's leader fail, if it has one. */
  readonly leaderHealth: LeaderHealthReport | null;
  /**
   * kilo-ts: whether other nodes' traffic may be relayed through this one (docs/relays.md). Absent:
   * the node's agent announces no mesh flags (Kilo's agent, an older kilo-ts), so it never relays.
   */
  readonly relay?: RelayRole;
  /** kilo-ts: the nodes this one cannot reach directly over WireGuard (kilo.squat.ai/unreachable); absent: none. */
  readonly unreachable?: readonly string[];
  /** kilo-ts: a spoke (kilo.squat.ai/spoke=true) peers only with its hub, a relay; absent: not a spoke. */
  readonly spoke?: true;
}

/** `prefer`: marked by an operator; `allow`: any kilo-ts node; `never`: --relay=false or marked "false". */
export type RelayRole = 'prefer' | 'allow' | 'never';

/**
 * A follower's report: its probes through `leader` (to the other locations' leaders) have failed
 * during the leader's term, the Lease whose acquireTime is `term` (ms since the epoch).
 */
export interface LeaderHealthReport {
  readonly leader: string;
  readonly term: number;
}

/** A kilo.squat.ai/v1alpha1 Peer, validated. */
export interface KiloPeer {
  readonly name: string;
  readonly allowedIPs: readonly Cidr[];
  readonly publicKey: string;
  readonly endpoint: Endpoint | null;
  readonly persistentKeepalive: number;
  readonly presharedKey: string | null;
}
