import type { Host } from '../host/host.js';
import { ciliumHostInterface } from '../encapsulation/cilium.js';
import { flannelInterface } from '../encapsulation/flannel.js';
import { ipipInterface } from '../encapsulation/ipip.js';
import { UsageError } from '../model/errors.js';
import type { Cidr } from '../net/cidr.js';
import { listOf, type ByFamily } from '../net/family.js';
import { chooseAddresses, chooseIPv6Beside, cniBridge } from './discovery.js';
import type { HostFacts } from './agent.js';

/** What WireGuard adds to each packet (IPv6 outer header 40 + UDP 8 + WireGuard 32): `--mtu auto`. */
export const wireGuardOverhead = 80;

/** Finds the internal IP and endpoint address of this machine (once, at start). */
export async function discoverHost(
  host: Host,
  o: { interfaceName: string; subnet: Cidr | ByFamily<Cidr>; internalCIDRs: Cidr[]; prioritisePrivate: boolean },
): Promise<HostFacts> {
  const addresses = await host.addresses();
  const options = {
    // The CNI bridge's addresses are the pods' gateways, never the node's (Kilo ignores them too):
    // on a node without an IPv4 LAN, its IPv4 pod gateway would be taken for the internal IP.
    excludeInterfaces: [o.interfaceName, ipipInterface, flannelInterface, ciliumHostInterface, cniBridge],
    excludeCIDRs: listOf(o.subnet),
    internalCIDRs: o.internalCIDRs,
    prioritisePrivate: o.prioritisePrivate,
    defaultInterface: (await host.defaultRoute())?.iface ?? null,
  };
  const found = chooseAddresses(addresses, options);
  const facts: HostFacts = { internalIP: found.internalIP, endpointIP: found.endpointIP?.ip ?? null };
  // Only a dual-stack mesh (--subnet of two families) publishes the IPv6 ones beside Kilo's: the
  // nodes of a one-family mesh keep the annotations, and so the plans, they had.
  if (listOf(o.subnet).length < 2) return facts;
  const six = chooseIPv6Beside(addresses, options, found);
  return { ...facts, ipv6InternalIP: six.internalIP, ipv6EndpointIP: six.endpointIP?.ip ?? null };
}

/** --mtu auto: the default route's MTU minus WireGuard's overhead. */
export async function resolveMTU(host: Host, mtu: number | 'auto'): Promise<number | null> {
  if (mtu !== 'auto') return mtu;
  const route = await host.defaultRoute();
  if (!route)
    throw new UsageError(
      '--mtu auto: there is no default route (IPv4 or IPv6) to take the MTU from; give --mtu a number',
    );
  return route.mtu - wireGuardOverhead;
}
