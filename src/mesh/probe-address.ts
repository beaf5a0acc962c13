import type { KiloNode } from '../model/types.js';

/**
 * The address a node pings to test a path to another node's pods: the first address of the
 * target's pod CIDR (the pod bridge's gateway), of a family the path carries. With one family that
 * is the only one, as before. With two it is the first (IPv4 first) the sender, and the mate the
 * packet crosses in the clear (the target itself on the private network, a follower's leader), have
 * an internal IP of: a mate's pod CIDR of a family it has no internal IP of has no route (plan.ts,
 * docs/dual-stack.md), and a node on an IPv6-only underlay reaches its IPv6-only mates over IPv6.
 * Through WireGuard (no mate) both families are routed; the sender's own family is the one its
 * route has a source of. Every prober (the election's, the per-pair health's) asks here, so one
 * node's probes of one target are one packet (agent/health-prober.ts). null: no pod CIDR.
 */
export function podProbeAddress(from: KiloNode, to: KiloNode, mate?: KiloNode): string | null {
  const pods = to.podCIDRs;
  if (pods.length === 0) return null;
  if (pods.length === 1) return pods[0]!.nth(1)!.text;
  for (const c of pods) {
    if (!hasFamily(from, c.family)) continue;
    if (mate && !hasFamily(mate, c.family)) continue;
    return c.nth(1)!.text;
  }
  return pods[0]!.nth(1)!.text;
}

function hasFamily(n: KiloNode, family: 4 | 6): boolean {
  for (const c of n.internalIPs) if (c.family === family) return true;
  return false;
}
