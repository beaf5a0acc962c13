import type { HostAddress } from '../host/host.js';
import type { Cidr, IP } from '../net/cidr.js';

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

function usable(a: HostAddress, o: DiscoveryOptions): boolean {
  if (o.excludeInterfaces.includes(a.iface) || a.iface === 'lo') return false;
  const ip = a.address.ip;
  if (ip.family === 4 && ip.bytes[0] === 127) return false;
  if (ip.family === 4 && ip.bytes[0] === 169 && ip.bytes[1] === 254) return false;
  if (ip.family === 6 && ip.bytes[0] === 0xfe && (ip.bytes[1]! & 0xc0) === 0x80) return false;
  if (ip.family === 6 && ip.text === '::1') return false;
  return !o.excludeCIDRs.some((c) => c.contains(ip));
}

/**
 * Picks the node's internal IP and endpoint from its addresses (pure). The internal IP is a
 * private address (inside --internal-cidr when given); the endpoint is the first public address,
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
      : candidates.find((a) => a.address.ip.isPrivate());
  const publicAddr = candidates.find((a) => !a.address.ip.isPrivate());
  const privateAddr = internal ?? candidates.find((a) => a.address.ip.isPrivate());
  const endpoint = o.prioritisePrivate ? (privateAddr ?? publicAddr) : (publicAddr ?? privateAddr);
  return { internalIP: internal?.address ?? null, endpointIP: endpoint?.address ?? null };
}

/** The interface holding `ip` (the private interface, holding the internal IP), or null when none does. */
export function interfaceHolding(addresses: readonly HostAddress[], ip: IP): string | null {
  return addresses.find((a) => a.address.ip.equals(ip))?.iface ?? null;
}
