/**
 * The encapsulation seam (Kilo's pkg/encapsulation): how packets reach location mates over the
 * private network, and which devices carry them. The plan asks it for gateways, the device a route
 * leaves by and the IPIP sources to accept (pure); the agent asks it to set the devices up, to name
 * the address it publishes for mates, and to clean up. One module per implementation: none.ts,
 * ipip.ts, flannel.ts, cilium.ts; `encapsulatorOf` picks one from the flags.
 */
import type { Host } from '../dataplane/host/host.js';
import type { Cidr, IP } from '../net/cidr.js';
import { ofFamily } from '../net/family.js';
import type { Encapsulate, KiloNode } from '../model/types.js';

/** --compatibility: the CNI kilo-ts runs beside; null when kilo-ts routes inside locations itself. */
export type Compatibility = 'flannel' | 'cilium';

/** The machine's devices an encapsulation uses; `private` only when it names the device (flannel). */
export interface EncapsulationDevices {
  /** The device behind the plan's `tunnel` role; null when there is none. */
  tunnel: string | null;
  /** The device behind the plan's `private` role, when the CNI's (else the one holding the internal IP). */
  private?: string;
}

export interface Encapsulator {
  readonly name: 'none' | 'ipip' | 'flannel' | 'cilium';

  // The plan's questions: pure.
  /** The device a packet to a location mate at `gw` leaves by: encapsulated or in the clear. */
  deviceTo(self: KiloNode, gw: IP): 'tunnel' | 'private';
  /** Where a location mate (with an internal IP) is reached over the private network. */
  mateGateway(mate: KiloNode): IP;
  /** Where a follower reaches its segment's leader (and, with `returnsToFollowers`, the leader its followers). */
  segmentGateway(node: KiloNode): IP;
  /** Whether a leader routes its followers' pods back through the encapsulation even without --local. */
  readonly returnsToFollowers: boolean;
  /** Whether the plan has the KILO-IPIP chain: IPIP from group mates accepted, any other dropped. */
  readonly acceptsIPIP: boolean;
  /** The outer sources of IPIP a group mate sends this node. */
  ipipSourcesOf(mate: KiloNode): Cidr[];

  // The machine's questions, asked by the agent around the dataplane.
  /** Brings the devices up when they are missing or down and names them. */
  setUp(host: Host): Promise<EncapsulationDevices>;
  /** How long `setUp`'s and `ownAddress`'s answers hold (ms); null: the agent's lifetime. */
  readonly recheckMs: number | null;
  /** The address location mates send encapsulated packets to, published on the node; null when none. */
  ownAddress(host: Host): Promise<IP | null>;
  /** Undoes what `setUp` made; the devices of the kernel and of the CNI stay. */
  cleanUp(host: Host): Promise<void>;
}

/** What chooses an encapsulator: --compatibility, --encapsulate and --local. */
export interface EncapsulationOptions {
  compatibility?: Compatibility | null;
  encapsulate: Encapsulate;
  local: boolean;
}

/** Whether traffic to `gw` crosses subnets: encapsulated under --encapsulate=crosssubnet. */
export function encapsulatesTo(strategy: Encapsulate, self: KiloNode, gw: IP): boolean {
  if (strategy === 'always') return true;
  if (strategy === 'crosssubnet') return !ofFamily(self.internalIPs, gw.family)?.contains(gw);
  return false;
}

/** A mate's internal IP: where it is reached in the clear without a CNI in between. */
export function internalGateway(mate: KiloNode): IP {
  return mate.internalIPs[0]!.ip;
}
