import type { MeshOptions } from './options.js';
import { relayedPairs } from './relays.js';
import type { Segment, Topology } from './topology.js';
import type { Plan, PlanPeer } from './types.js';

/**
 * The plan with this node's relayed pairs (relays.ts) applied (pure). At an end, the other end's
 * allowed IPs move to the relay's peer entry, except its WireGuard IPs: the direct entry keeps
 * those, so WireGuard keeps trying the direct path and a probe of the WireGuard IP says when it
 * works again. The routes stay (WireGuard picks the peer by allowed IP, the gateway is a label). The
 * relay forwards kilo0 to kilo0 with what it has: both ends are its peers with their full allowed
 * IPs, and their pods are not its own, so nothing is masqueraded; with --iptables-forward-rules it
 * also accepts the ends' pod CIDRs in FORWARD. A plan without relayed pairs is returned as it is.
 */
export function withRelays(plan: Plan, t: Topology, options: MeshOptions): Plan {
  if (!t.local.leader) return plan;
  const self = t.local.node.name;
  const pairs = relayedPairs(t, self);
  if (pairs.length === 0) return plan;
  const peers = new Map<string, PlanPeer>();
  const copied = plan.peers.map((p) => ({ ...p, allowedIPs: [...p.allowedIPs] }));
  for (const p of copied) if (p.kind === 'segment') for (const n of p.names) peers.set(n, p);
  const forward: string[] = [];
  const dropped = new Set<PlanPeer>();
  // What a relay accepts in FORWARD, gathered only when it writes such accepts: a relay's pairs are
  // thousands at 5 % of a big mesh (docs/performance.md#relays).
  const forwards = options.cni && options.iptablesForwardRules;
  let byLeader: Map<string, Segment> | null = null;
  for (const { a, b, via, spoke } of pairs) {
    if (via === self) {
      if (forwards) for (const end of [a, b]) for (const c of peers.get(end)?.allowedIPs ?? []) forward.push(c);
      continue;
    }
    const other = a === self ? b : a;
    const direct = peers.get(other);
    const relay = via === null ? undefined : peers.get(via);
    if (!direct || !relay) continue;
    byLeader ??= new Map(t.segments.map((s) => [s.leader.name, s]));
    const segment = byLeader.get(other)!;
    // A spoke's pairs keep no direct entry: the spoke peers with its hub alone.
    if (spoke) dropped.add(direct);
    const keep = new Set(spoke ? [] : segment.wireGuardIPs.map((ip) => ip.toHostCidr().networkText));
    relay.allowedIPs.push(...direct.allowedIPs.filter((c) => !keep.has(c)));
    direct.allowedIPs = direct.allowedIPs.filter((c) => keep.has(c));
  }
  const out: Plan = {
    ...plan,
    peers: dropped.size > 0 ? copied.filter((p) => !dropped.has(p)) : copied,
    relays: pairs.map((p) => ({ pair: [p.a, p.b], via: p.via, ...(p.spoke ? { spoke: true as const } : {}) })),
  };
  // What the relay forwards kilo0 to kilo0 is counted in its firewall (docs/relays.md).
  if (pairs.some((p) => p.via === self)) out.firewall = { ...out.firewall, countRelayed: true };
  if (forward.length > 0 && options.cni && options.iptablesForwardRules) {
    const podCIDRs = new Set(t.segments.flatMap((s) => s.nodes.flatMap((n) => n.podCIDRs.map((c) => c.networkText))));
    // An end of several pairs this node relays is listed once (one FORWARD accept per CIDR).
    const more = [...new Set(forward)].filter((c) => podCIDRs.has(c) && !plan.firewall.forwardPodCIDRs.includes(c));
    out.firewall = { ...out.firewall, forwardPodCIDRs: [...plan.firewall.forwardPodCIDRs, ...more] };
  }
  return out;
}
