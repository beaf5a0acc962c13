/**
 * IPIP through the kernel's tunl0 (Kilo's ipip encapsulator): location mates are reached through
 * the tunnel under --encapsulate=always, or when their internal IP is in another subnet under
 * crosssubnet; each node accepts IPIP from its group mates only.
 */
import type { Host } from '../host/host.js';
import type { Encapsulate, KiloNode } from '../model/types.js';
import type { IP } from '../net/cidr.js';
import { encapsulatesTo, internalGateway, type Encapsulation } from './encapsulator.js';

/** The kernel's IPIP device: it appears when the ipip module is loaded. */
export const ipipInterface = 'tunl0';

/**
 * tunl0, loading the ipip module when it is missing, brought up. A kernel without the module
 * (these CI machines) gives null, and a plan that needs the tunnel fails route by route with a
 * clear error.
 */
export async function ipipTunnel(host: Host): Promise<string | null> {
  if (!(await host.link(ipipInterface))) await host.loadModule('ipip').catch(() => undefined);
  if (!(await host.link(ipipInterface))) return null;
  await host.bringUp(ipipInterface).catch(() => undefined);
  return ipipInterface;
}

export function ipip(strategy: Exclude<Encapsulate, 'never'>, local: boolean): Encapsulation {
  return {
    encapsulator: {
      name: 'ipip',
      // tunl0 carries IPv4 only: a mate reached at an IPv6 address (an IPv6-only LAN) is reached in the clear.
      deviceTo: (self: KiloNode, gw: IP) =>
        gw.family === 4 && encapsulatesTo(strategy, self, gw) ? 'tunnel' : 'private',
      mateGateway: internalGateway,
      segmentGateway: internalGateway,
      returnsToFollowers: false,
      // Without --local nothing inside the location is routed by Kilo, so no mate sends IPIP.
      acceptsIPIP: local,
      ipipSourcesOf: (mate) => [internalGateway(mate).toHostCidr()],
    },
    device: {
      setUp: async (host) => ({ tunnel: await ipipTunnel(host) }),
      recheckMs: null,
      ownAddress: async () => null,
      // tunl0 is the kernel's (it goes only with the module) and carries no address of ours.
      cleanUp: async () => {},
    },
  };
}
