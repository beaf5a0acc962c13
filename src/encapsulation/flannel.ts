/**
 * --compatibility=flannel: flannel carries traffic inside a location over its VXLAN device
 * flannel.1 (the plan's `private` role), to the other node's VTEP address, the network address of
 * its pod CIDR. kilo-ts adds no tunnel, no table-1107 routes and no IPIP rules of its own.
 */
import type { IP } from '../net/cidr.js';
import { internalGateway, type Encapsulation, type Encapsulator } from './encapsulator.js';

/** flannel's VXLAN device (its VTEP). */
export const flannelInterface = 'flannel.1';

const vtepOf = (n: Parameters<Encapsulator['mateGateway']>[0]): IP => n.podCIDRs[0]?.network ?? internalGateway(n);

export const flannel: Encapsulation = {
  encapsulator: {
    name: 'flannel',
    deviceTo: () => 'private',
    mateGateway: vtepOf,
    segmentGateway: vtepOf,
    returnsToFollowers: false,
    acceptsIPIP: false,
    ipipSourcesOf: () => [],
  },
  device: {
    // flannel.1 is flanneld's: named, never made or changed here.
    setUp: async () => ({ tunnel: null, private: flannelInterface }),
    recheckMs: null,
    ownAddress: async () => null,
    cleanUp: async () => {},
  },
};
