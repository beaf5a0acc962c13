import { Cidr } from '../net/cidr.js';
import type { ByFamily } from '../net/family.js';
import type { Compatibility } from '../encapsulation/index.js';
import type { Encapsulate, Granularity } from '../model/types.js';
import type { WireGuardIPAllocation } from '../model/mesh-flags.js';

/** The flags of `kg` that shape one node's plan. */
export interface MeshOptions {
  granularity: Granularity;
  /** The WireGuard subnet (Kilo's --subnet); its IPv4 one when there are two. */
  subnet: Cidr;
  /**
   * Dual-stack: one WireGuard subnet per family, `subnet` first (`--subnet 10.4.0.0/16,fd4b::/64`);
   * absent with one family. Each segment has the address of one slot in each.
   */
  subnets?: ByFamily<Cidr>;
  /** Listen port when the node's endpoint names none (Kilo's --port). */
  port: number;
  encapsulate: Encapsulate;
  /** Route inside the own location in the clear (Kilo's --local). */
  local: boolean;
  /** Kilo manages the CNI: masquerade the pod subnet (Kilo's --cni). */
  cni: boolean;
  serviceCIDRs: Cidr[];
  iptablesForwardRules: boolean;
  /** Route other nodes' internal IPs through WireGuard even when they are its endpoints (rule-based routing). */
  routeHostTraffic: boolean;
  /** The CNI kilo-ts runs beside (--compatibility): it picks the encapsulation (src/encapsulation/). */
  compatibility?: Compatibility | null;
  privateKeyPath: string;
  /** --wireguard-ip-allocation; absent is `kilo` (Kilo's positional rule). See allocation.ts. */
  wireGuardIPAllocation?: WireGuardIPAllocation;
}

export const defaultMeshOptions: MeshOptions = {
  granularity: 'location',
  subnet: Cidr.parse('10.4.0.0/16'),
  port: 51820,
  encapsulate: 'always',
  local: true,
  cni: true,
  serviceCIDRs: [],
  iptablesForwardRules: false,
  routeHostTraffic: false,
  privateKeyPath: '/var/lib/kilo/key',
};

/** The WireGuard subnets, one per family, IPv4's first. */
export function subnetsOf(options: Pick<MeshOptions, 'subnet' | 'subnets'>): ByFamily<Cidr> {
  return options.subnets ?? [options.subnet];
}
