/**
 * The host seam: what the agent reads from the machine around the dataplane (its addresses, its
 * interfaces, the default route and its MTU, a CNI's devices, whether it forwards, whether an
 * address answers a ping) and the two changes it makes there outside the plan (an encapsulation's
 * device brought up, the ipip module loaded). One Linux
 * implementation (iproute2's JSON, src/dataplane/host/linux.ts) and one in-memory fake
 * (src/dataplane/host/fake.ts) pass one contract suite (test/host/host-contract.ts). The seam sits
 * in a folder of its own, low (it imports only net), so that encapsulation, the election and the
 * agent use it without importing the dataplane; its two implementations run on the dataplane's
 * command runner and fake kernel, so they live there.
 */
import type { Cidr } from '../net/cidr.js';

/** An address on one of the machine's interfaces, with its prefix. */
export interface HostAddress {
  iface: string;
  address: Cidr;
}

/** An interface as the agent sees it (its addresses are in `addresses`). */
export interface HostLink {
  up: boolean;
  mtu: number;
}

/** The interface the default route leaves by, and its MTU. */
export interface DefaultRoute {
  iface: string;
  mtu: number;
}

export interface Host {
  /**
   * The addresses of every interface (or of `iface` alone; none when it does not exist), in the
   * kernel's order, except the kernel's loopback (scope host) ones.
   */
  addresses(iface?: string): Promise<HostAddress[]>;
  /** The interface, or null when there is none of that name. */
  link(name: string): Promise<HostLink | null>;
  /** The default route of IPv4, else of IPv6 (the lowest metric); null when there is none. */
  defaultRoute(): Promise<DefaultRoute | null>;
  /** Brings an interface up; rejects when it does not exist. */
  bringUp(name: string): Promise<void>;
  /** Loads a kernel module; rejects when it cannot be loaded. */
  loadModule(name: string): Promise<void>;
  /** Whether IPv4 forwarding is on (net.ipv4.ip_forward); null when it cannot be read. */
  ipv4Forwarding(): Promise<boolean | null>;
  /** Whether IPv6 forwarding is on (net.ipv6.conf.all.forwarding); null when it cannot be read (no IPv6). */
  ipv6Forwarding(): Promise<boolean | null>;
  /**
   * Whether the kernel would forward a packet from `from` to `to` that arrived on `iif` (its
   * routing decision: false when forwarding is off, `iif` does not exist or `to` has no route).
   */
  wouldForward(from: string, to: string, iif: string): Promise<boolean>;
  /** One ICMP echo with a second's patience: true when answered. */
  ping(address: string): Promise<boolean>;
}
