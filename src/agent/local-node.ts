import { Annotation, lastSeenIntervalSeconds } from '../model/annotations.js';
import type { Cidr, IP } from '../net/cidr.js';
import type { Endpoint, Granularity } from '../model/types.js';

/** What the agent knows about its own node and publishes as annotations. */
export interface LocalFacts {
  publicKey: string;
  /** Detected `ip:port`; published only when the node has no endpoint annotation yet. */
  endpoint: string | null;
  internalIP: Cidr | null;
  /** The interface address (CIDR with the mesh mask) or null on a non-leader. */
  wireGuardIP: string | null;
  granularity: Granularity;
  /** The announcement of the flags that shape the plan (formatMeshFlags); absent: not announced. */
  meshFlags?: string;
  /** Where WireGuard on this node saw roaming peers (public key → endpoint). */
  discoveredEndpoints: ReadonlyMap<string, Endpoint>;
  /** Unix seconds. */
  now: number;
  /** --compatibility=cilium: cilium_host's address; null (published as "") otherwise or while unknown. */
  ciliumInternalIP?: IP | null;
  /** kilo.squat.ai/leader-health (the election's report on this node's leader); null or absent: none. */
  leaderHealth?: string | null;
  /**
   * kilo.squat.ai/path-health: written when `urgent` (a pair's state changed), else only with
   * last-seen's refresh, so that moving counts cost no patch of their own. Absent: left alone.
   */
  pathHealth?: { value: string; urgent: boolean };
  /** kilo.squat.ai/next-key: the public key of a rotation under way; null removes it; absent: untouched. */
  nextKey?: string | null;
  /** kilo.squat.ai/key-rotated: the rotation request last served; absent: untouched. */
  keyRotated?: string;
  /**
   * Dual-stack mesh only: the IPv6 values beside Kilo's (docs/annotations.md#dual-stack). Absent,
   * the node is annotated exactly as before; present, IPv6 discovered endpoints go to their own
   * annotation when Kilo's holds IPv4 ones.
   */
  ipv6?: { internalIP: Cidr | null; endpoint: string | null; wireGuardIP: string | null };
  /**
   * The node's pod CIDRs are IPv4 only (model/ipv6-pods.ts): its -ipv6 internal IP, endpoint and
   * discovered endpoints are left from its dual-stack days, which the plan does not read; removed.
   * wireguard-ip-ipv6 stays, the segment's claim on its IPv6 address (docs/wireguard-ips.md).
   */
  lostIPv6Pods?: boolean;
  /** kilo.squat.ai/unreachable (formatUnreachable): null removes it; absent: left alone. */
  unreachable?: string | null;
}

const lastSeenSlackSeconds = 5;

/**
 * `{}` when nothing roams, as Kilo writes it (its map is made empty, never nil, once the node is
 * in its topology): a node reads the same whichever of the two agents runs on it.
 */
function discoveredJSON(m: ReadonlyMap<string, Endpoint>): string {
  const keys = [...m.keys()].sort();
  const out: Record<string, { IP: string; Port: number; Zone: string }> = {};
  for (const k of keys) {
    const e = m.get(k)!;
    if (e.ip) out[k] = { IP: e.ip.text, Port: e.port, Zone: '' };
  }
  return JSON.stringify(out);
}

/**
 * Kilo's discovered-endpoints annotation, and on a dual-stack node whose Kilo endpoint is IPv4 the
 * IPv6 ones apart: a Kilo agent reading Kilo's annotation finds only endpoints of the family it
 * dials (mesh/endpoint-family.ts).
 */
function discoveredAnnotations(facts: LocalFacts): Record<string, string | null> {
  const all = facts.discoveredEndpoints;
  if (facts.lostIPv6Pods || !facts.ipv6 || !facts.endpoint || facts.endpoint.startsWith('[')) {
    return {
      [Annotation.discoveredEndpoints]: discoveredJSON(all),
      // Kilo's annotation holds them all: an -ipv6 one left from before would add stale ones.
      ...(facts.lostIPv6Pods || facts.ipv6 ? { [Annotation.discoveredEndpointsIPv6]: null } : {}),
    };
  }
  const four = new Map<string, Endpoint>();
  const six = new Map<string, Endpoint>();
  for (const [k, e] of all) (e.ip?.family === 6 ? six : four).set(k, e);
  return {
    [Annotation.discoveredEndpoints]: discoveredJSON(four),
    [Annotation.discoveredEndpointsIPv6]: six.size > 0 ? discoveredJSON(six) : null,
  };
}

/**
 * The merge patch that brings the node's agent-owned annotations up to date, or null when
 * nothing changed. last-seen is refreshed only when it is nearly an interval old, so an
 * unchanged node costs about one patch per interval.
 */
export function annotationPatch(
  current: Readonly<Record<string, string>>,
  facts: LocalFacts,
): Record<string, string | null> | null {
  const want: Record<string, string | null> = {
    [Annotation.key]: facts.publicKey,
    [Annotation.internalIP]: facts.internalIP ? facts.internalIP.toString() : '',
    [Annotation.wireGuardIP]: facts.wireGuardIP ?? '',
    [Annotation.granularity]: facts.granularity,
    ...(facts.meshFlags !== undefined ? { [Annotation.meshFlags]: facts.meshFlags } : {}),
    ...discoveredAnnotations(facts),
    [Annotation.ciliumInternalIP]: facts.ciliumInternalIP?.text ?? '',
    [Annotation.cniCompatibilityIP]: facts.ciliumInternalIP?.text ?? '',
    [Annotation.leaderHealth]: facts.leaderHealth ?? null,
    ...(facts.nextKey !== undefined ? { [Annotation.nextKey]: facts.nextKey } : {}),
    ...(facts.keyRotated !== undefined ? { [Annotation.keyRotated]: facts.keyRotated } : {}),
    ...(facts.unreachable !== undefined ? { [Annotation.unreachable]: facts.unreachable } : {}),
  };
  // The endpoint is the operator's once set (Kilo's behaviour): detect it only for a new node.
  if (!current[Annotation.endpoint] && facts.endpoint) want[Annotation.endpoint] = facts.endpoint;
  const six = facts.ipv6;
  if (facts.lostIPv6Pods) {
    want[Annotation.internalIPv6] = null;
    want[Annotation.endpointIPv6] = null;
  } else if (six) {
    want[Annotation.internalIPv6] = six.internalIP ? six.internalIP.toString() : null;
    want[Annotation.wireGuardIPv6] = six.wireGuardIP;
    if (!current[Annotation.endpointIPv6] && six.endpoint) want[Annotation.endpointIPv6] = six.endpoint;
  }
  const lastSeen = Number(current[Annotation.lastSeen] ?? 0);
  // The timer ticks every interval, a fraction of a second after the previous write: with "older
  // than the interval" a tick would often find 29 s and skip, leaving last-seen ~60 s old, at the
  // edge of readiness. The slack makes every tick refresh.
  if (!(facts.now - lastSeen < lastSeenIntervalSeconds - lastSeenSlackSeconds))
    want[Annotation.lastSeen] = String(facts.now);
  if (facts.pathHealth && (facts.pathHealth.urgent || want[Annotation.lastSeen] !== undefined))
    want[Annotation.pathHealth] = facts.pathHealth.value;

  const patch: Record<string, string | null> = {};
  for (const [k, v] of Object.entries(want)) {
    const has = Object.prototype.hasOwnProperty.call(current, k);
    if (v === null ? has : current[k] !== v) patch[k] = v;
  }
  return Object.keys(patch).length > 0 ? patch : null;
}
