import { endpointFor } from '../mesh/endpoint-family.js';
import type { Cidr } from '../net/cidr.js';
import { formatEndpoint } from '../model/parse.js';
import type { Endpoint, KiloPeer } from '../model/types.js';
import { effectiveEndpoint, TopologyError, type Segment, type Topology } from '../mesh/topology.js';
import { wireGuardAddresses } from '../mesh/plan.js';
import type { Plan } from '../mesh/types.js';
import type { IniConfig, IniPeer } from '../wireguard/ini.js';

/**
 * What `kgctl showconf` prints, as pure functions of the topology: a node's own WireGuard
 * config, a node or Peer as someone else's [Peer], and the config a Peer needs to join.
 */

/** One WireGuard peer as someone outside sees it; also the spec of a kilo.squat.ai Peer. */
export interface AsPeer {
  name: string;
  publicKey: string;
  allowedIPs: string[];
  endpoint: Endpoint | null;
  persistentKeepalive: number;
  presharedKey: string | null;
}

const segmentName = (s: Segment) => s.nodes.map((n) => n.name).join(', ');

/** Why a node that is not its segment's leader has no WireGuard config; null for a leader. */
export function notLeader(t: Topology): string | null {
  if (t.local.leader) return null;
  const s = t.local.segment;
  return `node ${JSON.stringify(t.local.node.name)} is not a leader: ${JSON.stringify(s.leader.name)} runs WireGuard for location ${JSON.stringify(s.location)}`;
}

/** Only a segment's leader runs WireGuard; anything else has no config to show. */
export function requireLeader(t: Topology): void {
  const why = notLeader(t);
  if (why !== null) throw new TopologyError(why);
}

/** The node's WireGuard device as the agent sets it, without the private key. */
export function nodeConfig(plan: Plan): IniConfig {
  return {
    interface: { listenPort: plan.listenPort, address: wireGuardAddresses(plan) },
    peers: plan.peers.map((p) => ({
      comment: p.kind === 'peer' ? `${p.names.join(', ')} (Peer)` : p.names.join(', '),
      publicKey: p.publicKey,
      presharedKey: p.presharedKey,
      allowedIPs: p.allowedIPs,
      endpoint: p.endpoint,
      persistentKeepalive: p.persistentKeepalive,
    })),
  };
}

/**
 * The node's segment as one WireGuard peer for someone outside the mesh: the leader's key, the
 * segment's allowed IPs plus `extra`, and the endpoint the mesh itself dials (behind NAT: where
 * the mesh last saw it, as in `showconf peer`; a private announced address is no use outside).
 */
export function nodeAsPeer(t: Topology, extra: readonly Cidr[]): AsPeer {
  requireLeader(t);
  const s = t.local.segment;
  return {
    name: t.local.node.name,
    publicKey: s.leader.key!,
    allowedIPs: dedupe([...s.allowedIPs.map((c) => c.networkText), ...extra.map((c) => c.networkText)]),
    endpoint: effectiveEndpoint(t, s.leader.endpoint, s.leader.key!, s.leader.persistentKeepalive),
    persistentKeepalive: 0,
    presharedKey: null,
  };
}

/** A Peer as someone else's [Peer]: its own allowed IPs plus `extra`. */
export function peerAsPeer(p: KiloPeer, extra: readonly Cidr[]): AsPeer {
  return {
    name: p.name,
    publicKey: p.publicKey,
    allowedIPs: dedupe([...p.allowedIPs.map((c) => c.networkText), ...extra.map((c) => c.networkText)]),
    endpoint: p.endpoint,
    persistentKeepalive: p.persistentKeepalive,
    presharedKey: p.presharedKey,
  };
}

export function asPeerIni(p: AsPeer): IniConfig {
  return {
    interface: null,
    peers: [
      {
        comment: p.name,
        publicKey: p.publicKey,
        presharedKey: p.presharedKey,
        allowedIPs: p.allowedIPs,
        endpoint: p.endpoint ? formatEndpoint(p.endpoint) : null,
        persistentKeepalive: p.persistentKeepalive,
      },
    ],
  };
}

/**
 * What the Peer `name` configures to join: every segment (a Peer is outside all of them) with
 * the Peer's keepalive and preshared key, then the other Peers. Endpoints of segments behind
 * NAT are where the mesh last saw them.
 */
export function peerConfig(t: Topology, name: string): IniConfig {
  const self = t.peers.find((p) => p.name === name);
  if (!self) throw new TopologyError(`Peer ${JSON.stringify(name)} is not a ready Peer of the cluster`);
  const keepalive = self.persistentKeepalive;
  const endpointText = (e: Endpoint | null) => (e ? formatEndpoint(e) : null);
  const peers: IniPeer[] = t.segments.map((s) => ({
    comment: segmentName(s),
    publicKey: s.leader.key!,
    presharedKey: self.presharedKey,
    allowedIPs: s.allowedIPs.map((c) => c.networkText),
    endpoint: endpointText(
      effectiveEndpoint(t, endpointFor(self, s.leader), s.leader.key!, s.leader.persistentKeepalive),
    ),
    persistentKeepalive: keepalive,
  }));
  for (const p of t.peers) {
    if (p.name === name) continue;
    peers.push({
      comment: `${p.name} (Peer)`,
      publicKey: p.publicKey,
      allowedIPs: p.allowedIPs.map((c) => c.networkText),
      endpoint: endpointText(effectiveEndpoint(t, p.endpoint, p.publicKey, p.persistentKeepalive)),
      persistentKeepalive: keepalive,
    });
  }
  return { interface: null, peers };
}

/** A kilo.squat.ai/v1alpha1 Peer object, ready for `kubectl apply` in another cluster. */
export function peerObject(p: AsPeer): Record<string, unknown> {
  const spec: Record<string, unknown> = { allowedIPs: p.allowedIPs };
  if (p.endpoint) {
    spec['endpoint'] = {
      dnsOrIP: p.endpoint.ip ? { ip: p.endpoint.ip.text } : { dns: p.endpoint.dns },
      port: p.endpoint.port,
    };
  }
  if (p.persistentKeepalive > 0) spec['persistentKeepalive'] = p.persistentKeepalive;
  if (p.presharedKey) spec['presharedKey'] = p.presharedKey;
  spec['publicKey'] = p.publicKey;
  return { apiVersion: 'kilo.squat.ai/v1alpha1', kind: 'Peer', metadata: { name: p.name }, spec };
}

function dedupe(values: string[]): string[] {
  return [...new Set(values)];
}
