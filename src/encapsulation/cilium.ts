/**
 * --compatibility=cilium (Kilo's cilium encapsulator, its current mode): between a leader and its
 * followers, both ways, IPIP rides Cilium's overlay to the other node's Cilium internal IP
 * (cilium_host's address, published as kilo.squat.ai/cilium-internal-ip; its pod CIDR's network
 * address until then), through Cilium's cilium_tunl when it exists, else tunl0.
 */
import type { Host } from '../host/host.js';
import type { Encapsulate, KiloNode } from '../model/types.js';
import type { IP } from '../net/cidr.js';
import { encapsulatesTo, internalGateway, type Encapsulation } from './encapsulator.js';
import { ipipTunnel } from './ipip.js';

/** Cilium's host-side interface; its IPv4 address is the node's Cilium internal IP. */
export const ciliumHostInterface = 'cilium_host';
/** The kernel's tunl0 after Cilium renamed it (enable-ipip-termination). */
export const ciliumTunnelInterface = 'cilium_tunl';

/** The IPv4 address of cilium_host, or null when Cilium has not set it up (or does not run here). */
export async function ciliumHostIP(host: Host): Promise<IP | null> {
  const address = (await host.addresses(ciliumHostInterface)).find((a) => a.address.family === 4);
  return address?.address.ip ?? null;
}

/**
 * The IPIP interface beside Cilium: Cilium's cilium_tunl when it made one (brought up when Cilium
 * left it down; never removed, it is Cilium's), else the kernel's tunl0 as for plain IPIP.
 */
export async function ciliumTunnel(host: Host): Promise<string | null> {
  const link = await host.link(ciliumTunnelInterface);
  if (!link) return ipipTunnel(host);
  if (!link.up) {
    await host.bringUp(ciliumTunnelInterface).catch((e: Error) => {
      throw new Error(`setting ${ciliumTunnelInterface} up: ${e.message}`);
    });
  }
  return ciliumTunnelInterface;
}

/** Where IPIP to a node goes through Cilium's overlay. */
function overlayAddress(n: KiloNode): IP {
  return n.ciliumInternalIP ?? n.podCIDRs[0]?.network ?? internalGateway(n);
}

export function cilium(strategy: Encapsulate, local: boolean): Encapsulation {
  return {
    encapsulator: {
      name: 'cilium',
      deviceTo: (self, gw) => (encapsulatesTo(strategy, self, gw) ? 'tunnel' : 'private'),
      mateGateway: internalGateway,
      segmentGateway: overlayAddress,
      // Without --local a leader returns its followers' pod traffic the way it came (Kilo's return
      // path), not as raw packets handed to Cilium.
      returnsToFollowers: !local && strategy !== 'never',
      // IPIP runs between a leader and its followers even without --local.
      acceptsIPIP: strategy !== 'never',
      // Through Cilium's overlay the outer source is the sender's cilium_host address.
      ipipSourcesOf: (mate) => [
        internalGateway(mate).toHostCidr(),
        ...(mate.ciliumInternalIP ? [mate.ciliumInternalIP.toHostCidr()] : []),
      ],
    },
    device: {
      setUp: async (host) => ({ tunnel: strategy === 'never' ? null : await ciliumTunnel(host) }),
      // Cilium may start after the agent, give cilium_host its address late, or rename tunl0 to
      // cilium_tunl while the agent runs.
      recheckMs: 30_000,
      ownAddress: ciliumHostIP,
      // cilium_tunl and cilium_host are Cilium's.
      cleanUp: async () => {},
    },
  };
}
