import type { Exec } from '../dataplane/exec.js';
import { LinuxFirewallTables } from '../dataplane/iptables/tables.js';
import { LinuxLinks } from '../dataplane/links.js';
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
    firewall: new LinuxFirewallTables(exec, o.log ? { log: o.log } : {}),
  };
}

/**
 * The IPIP interface when the kernel has one. tunl0 appears when the ipip module is loaded; a
 * kernel without it (these CI machines) gets null, and a plan that needs it fails with a clear error.
 */
export async function ipipTunnel(exec: Exec): Promise<string | null> {
  const exists = async () =>
    exec.run(['ip', 'link', 'show', 'tunl0']).then(
      () => true,
      () => false,
    );
  if (!(await exists())) await exec.run(['modprobe', 'ipip']).catch(() => undefined);
  if (!(await exists())) return null;
  await exec.run(['ip', 'link', 'set', 'tunl0', 'up']).catch(() => undefined);
  return 'tunl0';
}
