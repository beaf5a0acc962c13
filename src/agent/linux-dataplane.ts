import type { Exec } from '../dataplane/exec.js';
import { LinuxFirewallTables } from '../dataplane/iptables/tables.js';
import { LinuxLinks } from '../dataplane/links.js';
import { retiringNftables, type FirewallBackend } from '../dataplane/nftables/choice.js';
import { LinuxNftablesTables } from '../dataplane/nftables/tables.js';
import type { Dataplane } from '../dataplane/reconcile.js';
import { linuxRoutingTables } from '../dataplane/routes/index.js';
import { createWireGuardDevice, type WireGuardImplementation } from '../dataplane/wireguard/device.js';

export interface LinuxDataplaneOptions {
  interfaceName: string;
  createInterface: boolean;
  implementation: WireGuardImplementation;
  log?: (line: string) => void;
  /** Per-peer lines of a big change (see dataplane/log-summary.ts). */
  debug?: (line: string) => void;
  /** Called when a crashed wireguard-go was restarted: addresses and routes must be re-applied. */
  onRestart?: () => void;
  /** The firewall backend (--firewall, chosen at start); iptables when absent. */
  firewall?: FirewallBackend;
  /** Kilo's nftables table is on the machine: the iptables backend removes it once it has written. */
  nftablesInUse?: boolean;
}

/** The real dataplane of a Linux node (or of a network namespace, through its Exec). */
export function linuxDataplane(exec: Exec, o: LinuxDataplaneOptions): Dataplane {
  return {
    device: createWireGuardDevice(exec, {
      name: o.interfaceName,
      createInterface: o.createInterface,
      implementation: o.implementation,
      ...(o.log ? { log: o.log } : {}),
      ...(o.debug ? { debug: o.debug } : {}),
      ...(o.onRestart ? { onRestart: o.onRestart } : {}),
    }),
    links: new LinuxLinks(exec),
    routes: linuxRoutingTables(exec),
    firewall: firewallOf(exec, o),
  };
}

function firewallOf(exec: Exec, o: LinuxDataplaneOptions) {
  const log = { ...(o.log ? { log: o.log } : {}), kiloInterface: o.interfaceName };
  if (o.firewall === 'nftables') return new LinuxNftablesTables(exec, log);
  const iptables = new LinuxFirewallTables(exec, log);
  return o.nftablesInUse ? retiringNftables(iptables, exec) : iptables;
}
