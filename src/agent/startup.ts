import type { Host } from '../host/host.js';
import { ciliumHostInterface } from '../encapsulation/cilium.js';
import { flannelInterface } from '../encapsulation/flannel.js';
import { ipipInterface } from '../encapsulation/ipip.js';
import { UsageError } from '../model/errors.js';
import type { Cidr } from '../net/cidr.js';
import { chooseAddresses } from './discovery.js';
import type { HostFacts } from './agent.js';

/** What WireGuard adds to each packet (IPv6 outer header 40 + UDP 8 + WireGuard 32): `--mtu auto`. */
export const wireGuardOverhead = 80;

/** Finds the internal IP and endpoint address of this machine (once, at start). */
export async function discoverHost(
  host: Host,
  o: { interfaceName: string; subnet: Cidr; internalCIDRs: Cidr[]; prioritisePrivate: boolean },
): Promise<HostFacts> {
  const found = chooseAddresses(await host.addresses(), {
    excludeInterfaces: [o.interfaceName, ipipInterface, flannelInterface, ciliumHostInterface],
    excludeCIDRs: [o.subnet],
    internalCIDRs: o.internalCIDRs,
    prioritisePrivate: o.prioritisePrivate,
    defaultInterface: (await host.defaultRoute())?.iface ?? null,
  });
  return { internalIP: found.internalIP, endpointIP: found.endpointIP?.ip ?? null };
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
