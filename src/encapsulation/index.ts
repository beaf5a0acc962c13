import type { Encapsulation, Encapsulator, EncapsulationOptions } from './encapsulator.js';
import { cilium } from './cilium.js';
import { flannel } from './flannel.js';
import { ipip } from './ipip.js';
import { none } from './none.js';

export type {
  Compatibility,
  Encapsulation,
  EncapsulationDevice,
  EncapsulationDevices,
  EncapsulationName,
  Encapsulator,
  EncapsulationOptions,
} from './encapsulator.js';

/**
 * The encapsulation the flags ask for, both its parts: the CNI's beside one, else IPIP unless
 * --encapsulate=never. The one place the choice is made.
 */
export function encapsulationOf(o: EncapsulationOptions): Encapsulation {
  const beside = { flannel: () => flannel, cilium: () => cilium(o.encapsulate, o.local) };
  if (o.compatibility) return beside[o.compatibility]();
  return o.encapsulate === 'never' ? none : ipip(o.encapsulate, o.local);
}

/** The plan's part of the encapsulation the flags ask for (kgctl, which programs no machine). */
export function encapsulatorOf(o: EncapsulationOptions): Encapsulator {
  return encapsulationOf(o).encapsulator;
}
