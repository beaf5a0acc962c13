import type { MeshOptions } from '../mesh/options.js';
import type { Topology } from '../mesh/topology.js';
import type { Plan } from '../mesh/types.js';

/**
 * What the node publishes as kilo.squat.ai/wireguard-ip. Kilo's rule: the interface address, ""
 * on a follower. In `stable` mode that annotation is the segment's claim on its address
 * (src/mesh/allocation.ts), so every member publishes its segment's address (a new leader of a
 * location finds it held by all its mates), and a pass without a topology (the node not ready yet,
 * as after a restart) keeps what is there instead of giving the address up.
 */
export function publishedWireGuardIP(
  mesh: MeshOptions,
  plan: Plan | null,
  topology: Topology | null,
  current: string | undefined,
): string | null {
  if (mesh.wireGuardIPAllocation !== 'stable') return plan?.wireGuardIP ?? null;
  if (!topology) return current || null;
  const ip = topology.local.segment.wireGuardIPs[0];
  return ip ? `${ip.text}/${topology.subnet.prefix}` : null;
}

/**
 * What a dual-stack node publishes as kilo.squat.ai/wireguard-ip-ipv6, by the same rule as Kilo's
 * annotation above: the interface's IPv6 address, none on a follower; in `stable` mode every
 * member's segment address, kept through a pass without a topology. It is a claim as Kilo's is
 * (mesh/allocation-claims.ts), so switching a mesh between IPv6-only and dual-stack moves no
 * segment's IPv6 address.
 */
export function publishedWireGuardIPv6(
  mesh: MeshOptions,
  plan: Plan | null,
  topology: Topology | null,
  current: string | undefined,
): string | null {
  if (mesh.wireGuardIPAllocation !== 'stable') return plan?.wireGuardIPs?.[1] ?? null;
  if (!topology) return current || null;
  const ip = topology.local.segment.wireGuardIPs[1];
  return ip ? `${ip.text}/${topology.subnets[1]!.prefix}` : null;
}
