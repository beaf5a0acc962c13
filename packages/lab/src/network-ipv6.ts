import {
  apiAddressIPv6,
  lanIPv6,
  natLanIPv6,
  natLanIPv6Range,
  peerPublicIPv6,
  uplinkIPv6,
  type IpFamily,
} from './families.js';
import type { LabNode } from './layout.js';
import { ipBatch, run, sysctl } from './sh.js';

/**
 * The IPv6 half of the lab's wires (`--ip-family ipv6|dual`), beside network.ts's IPv4 one: the
 * same namespaces and links, IPv6 addresses and routes on them (families.ts). Addresses go on
 * without duplicate address detection (`nodad`), which would hold each one back for a second.
 */

export const hasIPv6 = (family: IpFamily | undefined): boolean => family === 'ipv6' || family === 'dual';

const forwarding = { 'net.ipv6.conf.all.forwarding': 1 };

/** The internet router forwards IPv6 too. */
export function ipv6Internet(router: string): void {
  sysctl(router, forwarding);
}

/** The API server's IPv6 address, and the router's on that subnet. */
export function ipv6Api(api: string, router: string, routerIf: string, siteOffset: number): void {
  ipBatch(api, [
    `addr add ${apiAddressIPv6(siteOffset)}/64 dev pub0 nodad`,
    `route add ::/0 via ${uplinkIPv6(siteOffset, 254)}`,
  ]);
  ipBatch(router, [`addr add ${uplinkIPv6(siteOffset, 254)}/64 dev ${routerIf} nodad`]);
}

/** The router's address on a location's uplink subnet (`bridge`). */
export function ipv6Uplink(router: string, bridge: string, site: number): void {
  ipBatch(router, [`addr add ${uplinkIPv6(site, 254)}/64 dev ${bridge} nodad`]);
}

/**
 * The NAT location's gateway, as a home router does IPv6: it routes a global range to the LAN
 * (its nodes' addresses stay their own, no NAT) and lets in only what answers a connection from
 * inside (conntrack), so a node behind it is dialled only after it dialled out: its endpoint has
 * to be discovered in IPv6 as in IPv4.
 */
export function ipv6NatGateway(gw: string, router: string, site: number): void {
  sysctl(gw, forwarding);
  ipBatch(gw, [
    `addr add ${lanIPv6(site, 1)}/64 dev lan0 nodad`,
    `addr add ${natLanIPv6(site, 1)}/64 dev lan0 nodad`,
    `addr add ${uplinkIPv6(site, 1)}/64 dev pub0 nodad`,
    `route add ::/0 via ${uplinkIPv6(site, 254)}`,
  ]);
  ipBatch(router, [`route add ${natLanIPv6Range(site)} via ${uplinkIPv6(site, 1)}`]);
  const filter = (rule: string[]) => run(['ip', 'netns', 'exec', gw, 'ip6tables', '-A', 'FORWARD', ...rule]);
  filter(['-i', 'pub0', '-m', 'conntrack', '--ctstate', 'ESTABLISHED,RELATED', '-j', 'ACCEPT']);
  filter(['-i', 'pub0', '-j', 'DROP']);
}

/**
 * A node's IPv6 addresses and default route (`ip -batch` lines for its namespace): the ULA and,
 * behind the NAT gateway, the global address on lan0; the global one on pub0 otherwise; the pod
 * gateway on the pod bridge.
 */
export function ipv6NodeLines(n: LabNode): string[] {
  const six = n.ipv6;
  if (!six) return [];
  const lines = [`addr add ${six.lanIP}/64 dev lan0 nodad`];
  if (n.publicIP === null) {
    lines.push(`addr add ${six.publicIP}/64 dev lan0 nodad`, `route add ::/0 via ${lanIPv6(n.site, 1)}`);
  } else {
    lines.push(`addr add ${six.publicIP}/64 dev pub0 nodad`, `route add ::/0 via ${uplinkIPv6(n.site, 254)}`);
  }
  return lines;
}

/** The pod bridge's IPv6 address (after the bridge exists), and the pod's. */
export function ipv6PodLines(n: LabNode, bridge: string): { node: string[]; pod: string[] } {
  const six = n.ipv6;
  if (!six) return { node: [], pod: [] };
  return {
    node: [`addr add ${six.podGateway}/64 dev ${bridge} nodad`],
    pod: [`addr add ${six.podIP}/64 dev eth0 nodad`, `route add ::/0 via ${six.podGateway}`],
  };
}

/** The Peer's public IPv6 address and the router's beside it. */
export function ipv6Peer(ns: string, router: string): void {
  ipBatch(router, [`addr add ${uplinkIPv6(200, 254)}/64 dev peer nodad`]);
  ipBatch(ns, [`addr add ${peerPublicIPv6}/64 dev pub0 nodad`, `route add ::/0 via ${uplinkIPv6(200, 254)}`]);
}
