/**
 * The Peers one cluster's nodes make in the other, as `kgctl showconf node N --as-peer -o yaml
 * --allowed-ips SERVICECIDR` would for every leader N (Kilo's docs/multi-cluster-services.md): one
 * Peer per WireGuard segment, named after its leader, with the leader's key and endpoint and the
 * segment's allowed IPs (pod CIDRs, private IPs, WireGuard IP). Pure.
 *
 * The service range goes on one Peer only, the first segment in Kilo's order (by key): WireGuard
 * routes a prefix to one peer, so Kilo's loop, which adds it to every node's Peer, leaves all but
 * one claim unused in `cross` and `full` granularity, or with several locations (kilo-ts keeps the
 * first and warns). One claim, moved to the next segment when that one goes, is what works.
 */
import type { KubeObject } from '../model/parse.js';
import { isNodeReady } from '../model/ready.js';
import { topologyOf } from '../mesh/compute.js';
import { effectiveEndpoint } from '../mesh/topology.js';
import { sourceLabel, type ClusterView } from './view.js';

export function mirroredPeers(from: ClusterView): KubeObject[] {
  const ready = from.cluster.nodes
    .filter((n) => isNodeReady(n, from.now))
    .map((n) => n.name)
    .sort();
  if (ready.length === 0) return [];
  const t = topologyOf(from.cluster, ready[0]!, from.options, from.now);
  return t.segments.map((s, i) => {
    const leader = s.leader;
    const allowedIPs = [...s.allowedIPs, ...(i === 0 ? from.serviceCidrs : [])].map((c) => c.networkText);
    const endpoint = effectiveEndpoint(t, leader.endpoint, leader.key!, leader.persistentKeepalive);
    const spec: Record<string, unknown> = { allowedIPs: [...new Set(allowedIPs)] };
    if (endpoint)
      spec['endpoint'] = {
        dnsOrIP: endpoint.ip ? { ip: endpoint.ip.text } : { dns: endpoint.dns },
        port: endpoint.port,
      };
    spec['publicKey'] = leader.key!;
    return {
      apiVersion: 'kilo.squat.ai/v1alpha1',
      kind: 'Peer',
      metadata: { name: leader.name, labels: { [sourceLabel]: from.name } },
      spec,
    };
  });
}
