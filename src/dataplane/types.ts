import type { Firewall, PlanGuardRoute, PlanPeer, PlanRoute, PlanRule } from '../mesh/types.js';
import type { WireGuardPeerState, WireGuardState } from '../wireguard/state.js';
import type { ParsedDump } from '../wireguard/dump.js';
import type { KiloRouting, RoutingRead } from './routes/reconciler.js';
import type { DesiredLink, LinkState } from './links.js';
import type { KernelRoute } from './routes/state.js';
import type { SavedTables } from './iptables/render.js';
import type { NftRuleset } from './nftables/ruleset.js';

export type { WireGuardPeerState, WireGuardState };

/**
 * The seams of the dataplane. Each concern has a Linux implementation and an in-memory fake
 * that pass the same contract tests; reconcile composes them.
 */

/** Write operations a reconcile performed; an unchanged plan must cost zero. */
export interface Ops {
  writes: number;
  /** One short line per write, for logs and tests (never a private key). */
  details: string[];
}

/** How a reconcile compares (kg apply's one-shot passes; see ReconcileOptions.once). */
export interface ReconcileOptions {
  /**
   * No later reconcile diffs against this one's writes (kg apply reads the machine on every pass): a
   * part may then compare in the machine's own terms (the routes, in the kernel's text).
   */
  once?: boolean;
}

/**
 * What a step diffs against, and what it is told its write left. A seam knows nothing of where
 * `current` came from: the dataplane's memory (cache.ts) decides when a step may diff against what
 * the last write left instead of reading the machine.
 */
export interface DiffAgainst<S> {
  /** The machine's state to diff against; absent: the step reads the machine. */
  current?: S;
  /** Told the state the step's write left, when the whole step succeeded. */
  wrote?: (after: S) => void;
}

/** The WireGuard device as a configure left it (its peers' states and preshared-key digests). */
export type WireGuardWritten = ParsedDump;
/** Kilo's routes (also by routeKey) and rules as a reconcile left them. */
export type RoutingWritten = KiloRouting & { byKey: ReadonlyMap<string, KernelRoute> };
/** Per family, the iptables tables as a restore left them (the iptables backend's state). */
export type IptablesWritten = ReadonlyMap<4 | 6, SavedTables>;
/** The nftables backend's: Kilo's table as read or as its transaction left it (null: none), and iptables. */
export interface NftablesWritten {
  readonly table: NftRuleset | null;
  /** null: the host has no iptables. */
  readonly iptables: IptablesWritten | null;
}
/**
 * What the last write of a firewall backend left. Each backend diffs only against its own kind and
 * reads the machine when handed the other's (the memory never mixes them: a node runs one backend).
 */
export type FirewallWritten = IptablesWritten | NftablesWritten;

/** Real interface names behind the plan's device roles. */
export interface DeviceNames {
  kilo: string;
  /** The interface holding the internal IP; null when the node has none. */
  private: string | null;
  /** The encapsulation interface (tunl0); null when encapsulation is off or impossible. */
  tunnel: string | null;
}

export interface WireGuardConfig {
  /** base64; read from the key file, never logged. */
  privateKey: string;
  listenPort: number;
  /** Firewall mark for the device's own UDP packets (0 = none). */
  fwmark?: number;
  peers: PlanPeer[];
}

export interface PeerChanges {
  added: string[];
  removed: string[];
  updated: string[];
}

export interface WireGuardDevice {
  readonly name: string;
  /**
   * Makes sure the interface exists: creates it (kernel), starts wireguard-go, or adopts it.
   * Resolves to whether it created the interface (false when it found one).
   */
  ensure(): Promise<boolean>;
  read(): Promise<WireGuardState>;
  /** The device as a configure diffs against it (its peers and preshared-key digests). */
  dump(): Promise<WireGuardWritten>;
  /** Applies only the difference: an unchanged peer keeps its session. */
  configure(config: WireGuardConfig, options?: ReconcileOptions & DiffAgainst<WireGuardWritten>): Promise<PeerChanges>;
  /** Removes the interface (and stops wireguard-go when we started it; `log`: its log too). */
  destroy(options?: { log?: boolean }): Promise<void>;
  /**
   * Its owner is stopping: from now on nothing creates the interface, neither ensure() (which still
   * finds one that is there) nor a restart of a wireguard-go that exits. Resolves once what was under
   * way has ended; a restart under way is undone. What runs stays: destroy() removes it.
   */
  detach(): Promise<void>;
}

export interface RoutingTables {
  /**
   * Makes Kilo's routes and rules equal to these; never touches what is not Kilo's. `read`: the
   * machine's routes and rules read earlier (read-ahead.ts), diffed against as this step's own read
   * would be (unlike `current`, the last write trusted, it shows the rules in the kernel's order).
   * `after`: the writes wait for it (the interface they need), the diff does not.
   */
  reconcile(
    routes: readonly PlanRoute[],
    rules: readonly PlanRule[],
    devices: DeviceNames,
    options?: ReconcileOptions &
      DiffAgainst<RoutingWritten> & {
        read?: RoutingRead;
        after?: Promise<unknown>;
        /** The plan's fail-closed guard (routes/guard.ts); none when absent. */
        guard?: readonly PlanGuardRoute[];
      },
  ): Promise<Ops>;
  /** Removes every route and rule that is Kilo's. */
  cleanup(): Promise<Ops>;
  /** Reads Kilo's routes and rules now, to be parsed when a reconcile diffs against them (`read`). */
  readUnparsed(): Promise<RoutingRead>;
}

export interface FirewallTables {
  /** Makes Kilo's chains and jumps equal to the plan's, atomically per family. */
  reconcile(firewall: Firewall, options?: DiffAgainst<FirewallWritten>): Promise<Ops>;
  cleanup(): Promise<Ops>;
  /** The tables a reconcile diffs against, per family (a family that cannot be read is left out). */
  read(): Promise<FirewallWritten>;
  /**
   * What the rule that counts relayed traffic (Firewall.countRelayed) has counted since it was
   * made, both families summed; null when the machine has no such rule.
   */
  readRelayed(): Promise<RelayedCount | null>;
}

/** Packets and bytes a relay forwarded from the WireGuard interface back into it. */
export interface RelayedCount {
  packets: number;
  bytes: number;
}

export interface Links {
  /** Sets the interface's only address to `cidr` (or none), up/down and MTU; returns writes. */
  reconcile(device: string, state: DesiredLink, options?: DiffAgainst<LinkState>): Promise<Ops>;
  /** The interface as reconcile diffs against it. */
  read(device: string): Promise<LinkState>;
}
