/**
 * The encapsulation seam (Kilo's pkg/encapsulation): how packets reach location mates over the
 * private network, and which devices carry them. One choice (`Encapsulation`), in two parts: the
 * `Encapsulator` the plan receives, which answers gateways, the device a route leaves by and the
 * IPIP sources to accept (pure); the `EncapsulationDevice` the agent and kg apply use to set the
 * devices up, to name the address it publishes for mates, and to clean up. One module per
 * implementation: none.ts, ipip.ts, flannel.ts, cilium.ts; `encapsulationOf` picks one from the
 * flags, both parts at once, so what is planned and what is programmed cannot differ.
 */
import type { Host } from '../host/host.js';
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

export type EncapsulationName = 'none' | 'ipip' | 'flannel' | 'cilium';

/** The plan's part of an encapsulation: pure questions about nodes. */
export interface Encapsulator {
  readonly name: EncapsulationName;
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
}

/** The device part of an encapsulation: the machine's questions, asked by the agent around the dataplane. */
export interface EncapsulationDevice {
  /** Brings the devices up when they are missing or down and names them. */
  setUp(host: Host): Promise<EncapsulationDevices>;
  /** How long `setUp`'s and `ownAddress`'s answers hold (ms); null: the agent's lifetime. */
  readonly recheckMs: number | null;
  /** The address location mates send encapsulated packets to, published on the node; null when none. */
  ownAddress(host: Host): Promise<IP | null>;
  /** Undoes what `setUp` made; the devices of the kernel and of the CNI stay. */
  cleanUp(host: Host): Promise<void>;
}

/** One encapsulation, chosen once: the part the plan receives and the part the machine runs. */
export interface Encapsulation {
  readonly encapsulator: Encapsulator;
  readonly device: EncapsulationDevice;
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
