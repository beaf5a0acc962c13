import { podProbeAddress } from '../mesh/probe-address.js';
import { groupSegments, remoteSegments, type Topology } from '../mesh/topology.js';
import type { KiloNode } from '../model/types.js';

/**
 * The paths one node is responsible for, and what it pings to test each (pure). `private`: a
 * location mate, in the clear over the private network; `wireguard`: a remote segment's leader,
 * through the tunnel (only a segment's leader has WireGuard peers: a follower's remote traffic is
 * its leader's path). The address is the first of the node's pod CIDR, the pod bridge's gateway,
 * as the Lease election's probes use (election/probes.ts): so a probe takes the route pod traffic
 * takes, and the election's probe of the same node is the same packet (health-prober.ts).
 */
export interface PathTarget {
  node: string;
  path: 'private' | 'wireguard';
  address: string;
  /** wireguard: the peer's public key (its handshakes are read from the device). */
  key: string | null;
}

export function pathTargets(t: Topology): PathTarget[] {
  const out: PathTarget[] = [];
  const self = t.local.node;
  for (const s of groupSegments(t))
    for (const n of s.nodes) if (n.name !== self.name) push(out, self, n, 'private', null);
  if (t.local.leader) for (const s of remoteSegments(t)) push(out, self, s.leader, 'wireguard', s.leader.key);
  return out;
}

function push(out: PathTarget[], self: KiloNode, n: KiloNode, path: PathTarget['path'], key: string | null): void {
  // Of two families, one the path carries: a mate is reached in the clear (mesh/probe-address.ts).
  const address = podProbeAddress(self, n, path === 'private' ? n : undefined);
  // A node without a pod CIDR has no bridge to answer: its path is judged by its handshakes alone.
  out.push({ node: n.name, path, address: address ?? '', key });
}

/** The identity of a pair as metrics, the annotation and the probe state key it. */
export const pairKey = (p: { node: string; path: string }): string => `${p.path}:${p.node}`;
