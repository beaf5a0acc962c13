import type { Encapsulator, EncapsulationOptions } from './encapsulator.js';
import { cilium } from './cilium.js';
import { flannel } from './flannel.js';
import { ipip } from './ipip.js';
import { none } from './none.js';

export type { Compatibility, EncapsulationDevices, Encapsulator, EncapsulationOptions } from './encapsulator.js';

/** The encapsulation the flags ask for: the CNI's beside one, else IPIP unless --encapsulate=never. */
export function encapsulatorOf(o: EncapsulationOptions): Encapsulator {
  const beside = { flannel: () => flannel, cilium: () => cilium(o.encapsulate, o.local) };
  if (o.compatibility) return beside[o.compatibility]();
  return o.encapsulate === 'never' ? none : ipip(o.encapsulate, o.local);
}
