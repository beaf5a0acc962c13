import { podProbeAddress } from '../mesh/probe-address.js';
import type { Topology } from '../mesh/topology.js';
import { groupSegments, remoteSegments } from '../mesh/topology.js';

/**
 * What a leader probes to prove that it forwards (pure: targets from the topology). The
 * addresses are the first of each node's pod CIDR — the pod bridge's gateway, where relayed
 * traffic goes — so a probe takes the route relayed packets take: to a follower over the
 * private network with the configured encapsulation, to a remote leader through WireGuard. Of
 * two families, one the path carries (mesh/probe-address.ts).
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
  const self = t.local.node;
  for (const s of groupSegments(t))
    for (const n of s.nodes) {
      const address = n !== self && podProbeAddress(self, n, n);
      if (address) out.push({ kind: 'follower', node: n.name, address });
    }
  for (const s of remoteSegments(t)) {
    const address = podProbeAddress(self, s.leader);
    if (address) out.push({ kind: 'remote-leader', node: s.leader.name, address });
  }
  return out;
}

/**
 * Relayed packets the kernel must be willing to forward: from a remote leader's pods, in on the
 * WireGuard interface, to a follower's pods; one per family the probes hold both ends of (the
 * first follower's, and a remote leader's of its family), as each family has its own forwarding
 * switch. `ip route get … iif` answers with the decision the kernel takes for such a packet (no
 * route to host when forwarding is off).
 */
export function forwardingProbes(t: Topology): { from: string; to: string }[] {
  const targets = probeTargets(t);
  const out: { from: string; to: string }[] = [];
  for (const six of [false, true]) {
    const follower = targets.find((p) => p.kind === 'follower' && p.address.includes(':') === six);
    const remote = targets.find((p) => p.kind === 'remote-leader' && p.address.includes(':') === six);
    if (follower && remote) out.push({ from: remote.address, to: follower.address });
  }
  return out;
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
