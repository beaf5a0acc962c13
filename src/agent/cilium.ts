/**
 * --compatibility=cilium, the machine side (Kilo's cilium encapsulator): the IPIP tunnel beside
 * Cilium and this node's Cilium internal IP, which the agent publishes so that its location mates
 * can send IPIP to it through Cilium's overlay.
 */
import type { Exec } from '../dataplane/exec.js';
import { IP } from '../net/cidr.js';
import { ipipTunnel } from './linux-dataplane.js';

/** Cilium's host-side interface; its IPv4 address is the node's Cilium internal IP. */
export const ciliumHostInterface = 'cilium_host';
/** The kernel's tunl0 after Cilium renamed it (enable-ipip-termination). */
export const ciliumTunnelInterface = 'cilium_tunl';

/** The IPv4 address of cilium_host, or null when Cilium has not set it up (or does not run here). */
export async function ciliumHostIP(exec: Exec): Promise<IP | null> {
  const shown = await exec.run(['ip', '-j', '-4', 'addr', 'show', 'dev', ciliumHostInterface]).catch(() => null);
  if (!shown) return null;
  const links = JSON.parse(shown.stdout || '[]') as { addr_info?: { local?: string; scope?: string }[] }[];
  for (const a of links[0]?.addr_info ?? []) {
    const ip = a.local === undefined ? null : IP.tryParse(a.local);
    if (ip?.family === 4 && a.scope !== 'host') return ip;
  }
  return null;
}

/**
 * The IPIP interface beside Cilium: Cilium's cilium_tunl when it made one (brought up when Cilium
 * left it down; never removed, it is Cilium's), else the kernel's tunl0 as for plain IPIP.
 */
export async function ciliumTunnel(exec: Exec): Promise<string | null> {
  const shown = await exec.run(['ip', '-j', 'link', 'show', 'dev', ciliumTunnelInterface]).catch(() => null);
  if (!shown) return ipipTunnel(exec);
  const link = (JSON.parse(shown.stdout || '[]') as { flags?: string[] }[])[0];
  if (!link?.flags?.includes('UP')) {
    await exec.run(['ip', 'link', 'set', 'dev', ciliumTunnelInterface, 'up']).catch((e: Error) => {
      throw new Error(`setting ${ciliumTunnelInterface} up: ${e.message}`);
    });
  }
  return ciliumTunnelInterface;
}

/**
 * Both facts, looked up again after `refreshMs`: Cilium may start after the agent, give
 * cilium_host its address late, or rename tunl0 to cilium_tunl while the agent runs.
 */
export class CiliumHost {
  private ip: { at: number; value: IP | null } | null = null;
  private tunl: { at: number; value: string | null } | null = null;

  constructor(
    private readonly exec: Exec,
    private readonly clock: () => number = Date.now,
    private readonly refreshMs = 30_000,
  ) {}

  async internalIP(): Promise<IP | null> {
    if (!this.fresh(this.ip)) this.ip = { at: this.clock(), value: await ciliumHostIP(this.exec) };
    return this.ip!.value;
  }

  async tunnel(): Promise<string | null> {
    if (!this.fresh(this.tunl)) this.tunl = { at: this.clock(), value: await ciliumTunnel(this.exec) };
    return this.tunl!.value;
  }

  private fresh(entry: { at: number } | null): boolean {
    return entry !== null && this.clock() - entry.at < this.refreshMs;
  }
}
