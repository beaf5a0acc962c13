import type { Topology } from '../mesh/topology.js';
import { groupSegments, remoteSegments } from '../mesh/topology.js';

/**
 * What a leader probes to prove that it forwards (pure: targets from the topology). The
 * addresses are the first of each node's pod CIDR — the pod bridge's gateway, where relayed
 * traffic goes — so a probe takes the route relayed packets take: to a follower over the
 * private network with the configured encapsulation, to a remote leader through WireGuard.
 */
export interface ProbeTarget {
  /** relay: a follower's probe of a remote leader through its own leader (relay.ts). */
  kind: 'follower' | 'remote-leader' | 'relay';
  node: string;
  address: string;
}

export function probeTargets(t: Topology): ProbeTarget[] {
  if (!t.local.leader || t.granularity !== 'location') return [];
  const out: ProbeTarget[] = [];
  for (const s of groupSegments(t))
    for (const n of s.nodes)
      if (n !== t.local.node && n.podCIDRs.length > 0)
        out.push({ kind: 'follower', node: n.name, address: n.podCIDRs[0]!.nth(1)!.text });
  for (const s of remoteSegments(t))
    if (s.leader.podCIDRs.length > 0)
      out.push({ kind: 'remote-leader', node: s.leader.name, address: s.leader.podCIDRs[0]!.nth(1)!.text });
  return out;
}

/**
 * A relayed packet the kernel must be willing to forward: from a remote leader's pods, in on
 * the WireGuard interface, to a follower's pods. `ip route get … iif` answers with the decision
 * the kernel takes for such a packet (no route to host when forwarding is off).
 */
export function forwardingProbe(t: Topology): { from: string; to: string } | null {
  const follower = probeTargets(t).find((p) => p.kind === 'follower');
  const remote = probeTargets(t).find((p) => p.kind === 'remote-leader');
  return follower && remote ? { from: remote.address, to: follower.address } : null;
}

/**
 * The verdict of one round: failing when the kernel would not forward, or when most probes got
 * no answer. A single follower that is down does not outvote the rest (quorum); a leader cut
 * off from every remote leader and follower fails.
 */
export function roundFails(results: readonly boolean[], forwards: boolean | null): boolean {
  if (forwards === false) return true;
  if (results.length === 0) return false;
  const failed = results.filter((ok) => !ok).length;
  return failed * 2 > results.length;
}
