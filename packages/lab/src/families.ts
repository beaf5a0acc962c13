/**
 * The lab's IPv6 address plan (pure), for `kg lab up --ip-family ipv6|dual`. It mirrors the IPv4
 * plan of layout.ts, so an address says where it is: site S and host H of 198.18.S.H are
 * 2001:db8:S::H (the digits written as they are, in a hexadecimal group).
 *
 *   uplink of site S          2001:db8:S::/64, the internet router at ::254, node i at ::(10+i), NAT gateway ::1
 *   LAN of site S             fd10:S::/64 (unique local: an internal IP), NAT gateway fd10:S::1
 *   LAN behind the NAT site   also 2001:db8:S:1::/64 (global, routed to the gateway; the nodes' endpoints)
 *   pod of node K             fd42:K::2/64 (fd52 in cluster 2), fd42:K::1 on the node's kube-bridge
 *   Peer                      2001:db8:200::10/64 public, fd05::1/128 its allowed IP
 *   API server                2001:db8:0::1 (beside 198.18.0.1)
 *
 * 2001:db8::/32 counts as public to the agents' discovery (IP.isNonPublic: only fc00::/7 is
 * private), fd00::/8 as private, as 198.18.0.0/15 and 192.168.0.0/16 do for IPv4.
 */

export const ipFamilies = ['ipv4', 'ipv6', 'dual'] as const;
export type IpFamily = (typeof ipFamilies)[number];

/** A node's IPv6 addresses (`--ip-family ipv6|dual`). */
export interface NodeIPv6 {
  /** The unique-local address on lan0 (the internal IP). */
  lanIP: string;
  /** The global address: on pub0, or on lan0 behind the NAT location's gateway. */
  publicIP: string;
  podCIDR: string;
  podIP: string;
  podGateway: string;
}

export const uplinkIPv6 = (site: number, host: number | string): string => `2001:db8:${site}::${host}`;
export const lanIPv6 = (site: number, host: number | string): string => `fd10:${site}::${host}`;
/** The global range of the LAN behind the NAT location's gateway (home routers route one, not NAT it). */
export const natLanIPv6 = (site: number, host: number | string): string => `2001:db8:${site}:1::${host}`;
export const natLanIPv6Range = (site: number): string => `2001:db8:${site}:1::/64`;

export const peerPublicIPv6 = uplinkIPv6(200, 10);
export const peerAllowedIPv6 = 'fd05::1/128';
/** The IPv6 WireGuard subnet beside `--subnet`'s IPv4 one: at least as many addresses (docs/dual-stack.md). */
export const wireguardSubnetIPv6 = 'fd4b::/64';
export const apiAddressIPv6 = (siteOffset: number): string => uplinkIPv6(siteOffset, 1);

export function nodeIPv6(site: number, index: number, podOctet: number, k: number, nat: boolean): NodeIPv6 {
  const host = 10 + index;
  return {
    lanIP: lanIPv6(site, host),
    publicIP: nat ? natLanIPv6(site, host) : uplinkIPv6(site, host),
    podCIDR: `fd${podOctet}:${k}::/64`,
    podIP: `fd${podOctet}:${k}::2`,
    podGateway: `fd${podOctet}:${k}::1`,
  };
}

/** `[v6]` for a URL or an endpoint; an IPv4 address as it is. */
export const hostText = (ip: string): string => (ip.includes(':') ? `[${ip}]` : ip);
