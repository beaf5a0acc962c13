import { wireguardSubnetIPv6, type IpFamily } from './families.js';
import type { ClusterPlan, LabNode } from './layout.js';
import type { Endpoint } from './probe.js';

/**
 * What `--ip-family` changes in the lab's agents and probes (the addresses themselves are
 * families.ts and network-ipv6.ts): the WireGuard subnets the agents take, and the pods as ping
 * targets of each family.
 */

/** The address families of the lab's pods, IPv4 first. */
export function labFamilies(nodes: readonly LabNode[]): (4 | 6)[] {
  const first = nodes[0];
  if (!first) return [4];
  if (first.podIP.includes(':')) return [6];
  return first.ipv6 ? [4, 6] : [4];
}

/** Each pod by its first address (labelled with its node's name), and by its IPv6 one as `NAME/v6` when it has both. */
export function podEndpointsOf(nodes: readonly LabNode[]): Endpoint[] {
  return nodes.flatMap((n): Endpoint[] => {
    const first: Endpoint = { name: n.name, ns: n.podNs, ip: n.podIP, family: n.podIP.includes(':') ? 6 : 4 };
    if (!n.ipv6 || n.ipv6.podIP === n.podIP) return [first];
    return [first, { name: `${n.name}/v6`, ns: n.podNs, ip: n.ipv6.podIP, family: 6 }];
  });
}

/** The WireGuard subnet of IPv6 for cluster C (fd4b::/64 for the first). */
export const wireguardSubnetIPv6Of = (cluster: number): string =>
  cluster === 1 ? wireguardSubnetIPv6 : `fd4b:${cluster - 1}::/64`;

/**
 * The agents' --subnet: none in an IPv4 lab's first cluster (Kilo's default, 10.4.0.0/16), the
 * cluster's own otherwise; one per family in a dual-stack lab, as kube-controller-manager's
 * --cluster-cidr takes them.
 */
export function subnetFlags(plan: ClusterPlan, family: IpFamily | undefined): string[] {
  const six = wireguardSubnetIPv6Of(plan.cluster);
  if (family === 'dual') return ['--subnet', `${plan.wireguardSubnet},${six}`];
  if (family === 'ipv6') return ['--subnet', six];
  return plan.cluster === 1 ? [] : ['--subnet', plan.wireguardSubnet];
}
