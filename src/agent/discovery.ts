import type { HostAddress } from '../host/host.js';
import type { Cidr, IP } from '../net/cidr.js';

/**
 * The bridge of Kilo's CNI configuration (its conflist's `bridge`), the pods' gateway: never a node's
 * address. Here, not in cni.ts, so that `kg apply` loads no CNI code (nor node:crypto) to know it.
 */
export const cniBridge = 'kube-bridge';

export interface DiscoveryOptions {
  /** Names never considered: the WireGuard interface, tunnels. */
  excludeInterfaces: readonly string[];
  /** Ranges never considered: the node's pod CIDR, the WireGuard subnet. */
  excludeCIDRs: readonly Cidr[];
  /** --internal-cidr: when set, the internal IP must lie inside one of these. */
  internalCIDRs: readonly Cidr[];
  /** --prioritise-private-addresses: prefer a private endpoint to a public one. */
  prioritisePrivate: boolean;
  /** The interface of the default route, tried first for the endpoint. */
  defaultInterface: string | null;
}

export interface Discovered {
  /** The internal IP as CIDR with the interface's mask, or null. */
  internalIP: Cidr | null;
  /** The endpoint address (without port), or null when the machine has no usable address. */
  endpointIP: Cidr | null;
}

/**
 * A dual-stack node's IPv6 internal IP and endpoint beside the IPv4 ones Kilo's annotations hold:
 * the same rule as chooseAddresses over the IPv6 addresses alone, each only where Kilo's value is
 * IPv4 (where it is IPv6 already, the node has no second one to publish).
 */
export function chooseIPv6Beside(addresses: readonly HostAddress[], o: DiscoveryOptions, kilo: Discovered): Discovered {
  const six = chooseAddresses(
    addresses.filter((a) => a.address.family === 6),
    o,
  );
  return {
    internalIP: kilo.internalIP?.family === 4 ? six.internalIP : null,
    endpointIP: kilo.endpointIP?.family === 4 ? six.endpointIP : null,
  };
}

function usable(a: HostAddress, o: DiscoveryOptions): boolean {
  if (o.excludeInterfaces.includes(a.iface) || a.iface === 'lo') return false;
  const ip = a.address.ip;
  if (ip.family === 4 && ip.bytes[0] === 127) return false;
  // Valid on one link only: never an internal IP or an endpoint.
  if (ip.isLinkLocal()) return false;
  if (ip.family === 6 && ip.text === '::1') return false;
  return !o.excludeCIDRs.some((c) => c.contains(ip));
}

/**
 * Picks the node's internal IP and endpoint from its addresses (pure). The internal IP is a
 * private address (RFC 1918, 100.64.0.0/10, fc00::/7: IP.isNonPublic) (inside --internal-cidr when given); the endpoint is the first public address,
 * preferring the default-route interface, else the internal IP — or the other way round with
 * --prioritise-private-addresses. IPv4 before IPv6.
 */
export function chooseAddresses(addresses: readonly HostAddress[], o: DiscoveryOptions): Discovered {
  const candidates = addresses
    .filter((a) => usable(a, o))
    .sort(
      (a, b) =>
        a.address.family - b.address.family ||
        Number(b.iface === o.defaultInterface) - Number(a.iface === o.defaultInterface),
    );
  const internal =
    o.internalCIDRs.length > 0
      ? candidates.find((a) => o.internalCIDRs.some((c) => c.contains(a.address.ip)))
      : candidates.find((a) => a.address.ip.isNonPublic());
  const publicAddr = candidates.find((a) => !a.address.ip.isNonPublic());
  const privateAddr = internal ?? candidates.find((a) => a.address.ip.isNonPublic());
  const endpoint = o.prioritisePrivate ? (privateAddr ?? publicAddr) : (publicAddr ?? privateAddr);
  return { internalIP: internal?.address ?? null, endpointIP: endpoint?.address ?? null };
}

/** The interface holding `ip` (the private interface, holding the internal IP), or null when none does. */
export function interfaceHolding(addresses: readonly HostAddress[], ip: IP): string | null {
  return addresses.find((a) => a.address.ip.equals(ip))?.iface ?? null;
}
