/** --encapsulate=never without a CNI beside: location mates are reached in the clear, no tunnel. */
import type { IP } from '../net/cidr.js';
import { internalGateway, type Encapsulation } from './encapsulator.js';

export const none: Encapsulation = {
  encapsulator: {
    name: 'none',
    deviceTo: () => 'private',
    mateGateway: internalGateway,
    segmentGateway: internalGateway,
    returnsToFollowers: false,
    acceptsIPIP: false,
    ipipSourcesOf: () => [],
  },
  device: {
    setUp: async () => ({ tunnel: null }),
    recheckMs: null,
    ownAddress: async (): Promise<IP | null> => null,
    cleanUp: async () => {},
  },
};
