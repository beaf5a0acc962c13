/** Kilo's annotation keys: the same names as upstream, so a Kilo cluster can switch agents. */
export const kiloAnnotationPrefix = 'kilo.squat.ai/';
const prefix = kiloAnnotationPrefix;

export const Annotation = {
  location: `${prefix}location`,
  leader: `${prefix}leader`,
  forceEndpoint: `${prefix}force-endpoint`,
  forceInternalIP: `${prefix}force-internal-ip`,
  persistentKeepalive: `${prefix}persistent-keepalive`,
  allowedLocationIPs: `${prefix}allowed-location-ips`,
  key: `${prefix}key`,
  endpoint: `${prefix}endpoint`,
  internalIP: `${prefix}internal-ip`,
  wireGuardIP: `${prefix}wireguard-ip`,
  /** The operator's WireGuard IP for the node's segment (squat/kilo#221's name); src/mesh/allocation.ts. */
  forceWireGuardIP: `${prefix}force-wireguard-ip`,
  lastSeen: `${prefix}last-seen`,
  discoveredEndpoints: `${prefix}discovered-endpoints`,
  granularity: `${prefix}granularity`,
  /**
   * kilo-ts, dual-stack (docs/annotations.md#dual-stack): a node's IPv6 value where Kilo's own
   * annotation holds its IPv4 one. Kilo's annotations keep one value in Kilo's format, so a Kilo
   * agent still reads a dual-stack node and reaches it over IPv4; Kilo ignores these.
   */
  forceEndpointIPv6: `${prefix}force-endpoint-ipv6`,
  forceInternalIPv6: `${prefix}force-internal-ip-ipv6`,
  endpointIPv6: `${prefix}endpoint-ipv6`,
  internalIPv6: `${prefix}internal-ip-ipv6`,
  discoveredEndpointsIPv6: `${prefix}discovered-endpoints-ipv6`,
  wireGuardIPv6: `${prefix}wireguard-ip-ipv6`,
  /** kilo-ts: the flags that shape the agent's plan, as JSON (src/model/mesh-flags.ts); kgctl reads them. */
  meshFlags: `${prefix}mesh-flags`,
  /** Kilo's --compatibility=cilium: the node's Cilium internal IP (cilium_host's IPv4 address). */
  ciliumInternalIP: `${prefix}cilium-internal-ip`,
  /**
   * The same address under the name ../shared/SEMANTICS.md gives it. Kilo (squat/kilo#409) writes
   * cilium-internal-ip; kilo-ts writes both and reads Kilo's first, so either kind of agent finds it.
   */
  cniCompatibilityIP: `${prefix}cni-compatibility-ip`,
  /**
   * kilo-ts, --leader-election=lease: a follower whose probes through its location's leader fail
   * names that leader and its term, so the leader learns it no longer forwards (see election/relay.ts).
   */
  leaderHealth: `${prefix}leader-health`,
  /** kilo-ts: the node's per-pair health, summarised and bounded (src/agent/health-summary.ts); kgctl status reads it. */
  pathHealth: `${prefix}path-health`,
  /** kilo-ts: the public key the node switches to next, published while a rotation is under way (docs/key-rotation.md). */
  nextKey: `${prefix}next-key`,
  /** kilo-ts, set by the administrator: a value not yet acknowledged in key-rotated asks the node to rotate its key. */
  rotateKey: `${prefix}rotate-key`,
  /** kilo-ts: the value of rotate-key that the node's last rotation served. */
  keyRotated: `${prefix}key-rotated`,
  /** kilo-ts: the nodes this one cannot reach directly over WireGuard, bounded (src/model/relay-annotations.ts). */
  unreachable: `${prefix}unreachable`,
  /** kilo-ts, set by an operator: "true" prefers the node as a relay, "false" never relays through it (docs/relays.md). */
  relay: `${prefix}relay`,
  /** kilo-ts, set by an operator: "true" = a spoke, peering only with a relay (hub and spoke, docs/relays.md). */
  spoke: `${prefix}spoke`,
} as const;

export const defaultTopologyLabel = 'topology.kubernetes.io/region';

/** A node is ready only when it has checked in this recently (seconds). */
export const readinessWindowSeconds = 60;

/** How often an agent refreshes last-seen; readiness allows 60 s, so one missed refresh is survivable. */
export const lastSeenIntervalSeconds = 30;
