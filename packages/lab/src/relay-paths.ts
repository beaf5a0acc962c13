/**
 * Which path a pair of lab nodes takes, read from the kernel (each node's `wg show kilo0
 * allowed-ips`): the node whose peer entry carries the other's pod CIDR is the other itself
 * (direct) or a relay. Shared by the relay end-to-end tests and bench/relay-lab.ts.
 */
import type { Lab } from './lab.js';
import { killNamespaceProcesses } from './processes.js';
import { inNodeNs, runAsync } from './sh.js';

/** Node name → its published WireGuard key, and back. */
export async function publishedKeys(lab: Lab): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const o of await lab.api.list('nodes')) {
    const key = o.metadata?.annotations?.['kilo.squat.ai/key'];
    if (o.metadata?.name && key) out.set(key, o.metadata.name);
  }
  return out;
}

/** `wg show kilo0 allowed-ips` of a node: public key → its allowed IPs (empty without a device). */
export async function allowedIPs(lab: Lab, node: string): Promise<Map<string, string[]>> {
  const r = await runAsync(inNodeNs(lab.node(node).ns, lab.runDir(node), ['wg', 'show', 'kilo0', 'allowed-ips']));
  const out = new Map<string, string[]>();
  if (r.code !== 0) return out;
  for (const line of r.stdout.split('\n').filter(Boolean)) {
    const [key, ...ips] = line.split(/\s+/);
    out.set(key!, ips);
  }
  return out;
}

/**
 * The node that carries `to`'s pods at `from` (`to` itself: the direct path; another: the relay),
 * or null when no peer entry has them. `keys` from publishedKeys.
 */
export async function carrier(
  lab: Lab,
  from: string,
  to: string,
  keys: ReadonlyMap<string, string>,
): Promise<string | null> {
  const cidr = lab.node(to).podCIDR;
  for (const [key, ips] of await allowedIPs(lab, from)) if (ips.includes(cidr)) return keys.get(key) ?? key;
  return null;
}

/**
 * The carrier of every ordered pair of the lab's nodes in different locations whose carrier is
 * not the destination itself: `from→to` → the carrier (null: none). Empty when every pair is direct.
 */
export async function indirectPairs(lab: Lab): Promise<Map<string, string | null>> {
  const keys = await publishedKeys(lab);
  const out = new Map<string, string | null>();
  for (const a of lab.nodes)
    for (const b of lab.nodes) {
      if (a.location === b.location) continue;
      const via = await carrier(lab, a.name, b.name, keys);
      if (via !== b.name) out.set(`${a.name}→${b.name}`, via);
    }
  return out;
}

/**
 * A relay node dies: its agent SIGKILLed and every process in its namespace (its wireguard-go)
 * killed, so its kilo0 goes and nothing answers there. `lab.startAgent(node)` brings it back.
 */
export async function killNode(lab: Lab, node: string): Promise<void> {
  await lab.stopAgent(node, 'SIGKILL');
  await killNamespaceProcesses(lab.node(node).ns);
}
