import type { Exec } from '../dataplane/exec.js';
import { defaultRouteMTU, NoDefaultRouteError, wireGuardOverhead } from '../dataplane/links.js';
import { UsageError } from '../model/errors.js';
import type { Cidr } from '../net/cidr.js';
import { chooseAddresses, defaultInterface, hostAddresses } from './discovery.js';
import type { HostFacts } from './agent.js';

/** Finds the internal IP and endpoint address of this machine (once, at start). */
export async function discoverHost(
  exec: Exec,
  o: { interfaceName: string; subnet: Cidr; internalCIDRs: Cidr[]; prioritisePrivate: boolean },
): Promise<HostFacts> {
  const found = chooseAddresses(await hostAddresses(exec), {
    excludeInterfaces: [o.interfaceName, 'tunl0', 'flannel.1', 'cilium_host'],
    excludeCIDRs: [o.subnet],
    internalCIDRs: o.internalCIDRs,
    prioritisePrivate: o.prioritisePrivate,
    defaultInterface: await defaultInterface(exec),
  });
  return { internalIP: found.internalIP, endpointIP: found.endpointIP?.ip ?? null };
}

/** --mtu auto: the default route's MTU minus WireGuard's overhead. */
export async function resolveMTU(exec: Exec, mtu: number | 'auto'): Promise<number | null> {
  if (mtu !== 'auto') return mtu;
  try {
    return (await defaultRouteMTU(exec)) - wireGuardOverhead;
  } catch (e) {
    throw e instanceof NoDefaultRouteError ? new UsageError(e.message) : e;
  }
}
