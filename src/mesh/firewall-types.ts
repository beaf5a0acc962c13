/**
 * Kilo's firewall for one node as intent: what is masqueraded, what is accepted. It names no
 * table, chain or match of any firewall; a backend renders it (src/dataplane/iptables/rules.ts
 * into iptables rules). Addresses are canonical CIDR text (Cidr.networkText) of either family,
 * each set already in its fewest prefixes where the plan aggregates it; a backend splits them by
 * family and writes each family with its own tools.
 */
export interface Firewall {
  masquerade: Masquerade;
  /**
   * --iptables-forward-rules (with --cni): forwarded packets from or to these pod CIDRs are
   * accepted, for distributions whose forwarding policy drops them. A leader lists its whole
   * segment's. Empty: no such rule.
   */
  forwardPodCIDRs: string[];
  /**
   * IPIP from location mates: accepted from `sources` (the outer sources mates send from), any
   * other IPIP dropped. null: no IPIP policy (no IPIP is sent to this node, or the CNI owns it).
   */
  ipip: { sources: string[] } | null;
  /**
   * kilo-ts: the node relays pairs that cannot reach each other directly (docs/relays.md), so what
   * it forwards from the WireGuard interface back into it is counted (kilo_relayed_bytes_total).
   * Absent when it relays nothing: a plan without relays is as before.
   */
  countRelayed?: true;
}

/**
 * Pod traffic that leaves the mesh is masqueraded, never what stays in it. A packet is considered
 * when it comes from one of `podCIDRs` or a Peer's allowed IP, or goes to an allowed location IP; it is
 * then masqueraded unless its destination is in one of the `exceptions`.
 */
export interface Masquerade {
  /** The node's pod CIDRs (one per family), when Kilo manages the CNI (--cni); empty otherwise. */
  podCIDRs: string[];
  /**
   * The allowed location IPs of the node's location (a printer LAN): traffic to them is
   * masqueraded, so that their replies find their way back. In the order the segments list them.
   */
  allowedLocationIPs: string[];
  /** Every Peer's allowed IPs, fewest prefixes: their traffic out of the mesh is masqueraded. */
  peerAllowedIPs: string[];
  /**
   * Destinations inside the mesh, never masqueraded, in groups by reason, in this order:
   * `wireguard-ips`, `known-ips`, `peers`, `service-cidrs`. Each group is in its fewest prefixes,
   * and an address an earlier group covers is left out of the later ones.
   */
  exceptions: MasqueradeException[];
}

/**
 * Why destinations are not masqueraded: the segments' WireGuard IPs, the segments' allowed IPs
 * (pod CIDRs, allowed location IPs, …: Kilo's "known IPs"), the Peers' allowed IPs, the service
 * CIDRs (--service-cidr).
 */
export type MasqueradeExceptionReason = 'wireguard-ips' | 'known-ips' | 'peers' | 'service-cidrs';

export interface MasqueradeException {
  reason: MasqueradeExceptionReason;
  destinations: string[];
}
