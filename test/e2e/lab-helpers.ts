/**
 * Shared by the lab end-to-end tests: a lab per test (its own state directory and namespace
 * prefix, torn down even when the test fails), and what the tests read back from the kernel.
 */
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { Lab } from '../../packages/lab/src/lab.js';
import type { LabOptions } from '../../packages/lab/src/layout.js';
import { inNodeNs, run } from '../../packages/lab/src/sh.js';
import { ensureBuilt } from '../cli/built.js';
import { skipNoNetns } from '../helpers/netns.js';

const missingTools = ['wireguard-go', 'wg', 'tcpdump', 'ping', 'iptables-save', 'nft'].filter(
  (t) => spawnSync('sh', ['-c', `command -v ${t}`]).status !== 0,
);

/** The lab tests skip only where namespaces cannot be made; a missing tool is a failure. */
export const skipLab = skipNoNetns;

let counter = 0;

/** A lab for one test: 2 locations × 2 nodes, location 2 behind NAT, a Peer, unless told otherwise. */
export async function upLab(t: TestContext, o: Partial<LabOptions> = {}): Promise<Lab> {
  if (missingTools.length > 0) {
    throw new Error(
      `the lab needs ${missingTools.join(', ')}: install the packages of README's setup line (system-packages.txt)`,
    );
  }
  ensureBuilt();
  const id = `${process.pid % 10000}${counter++}`;
  const dir = join(tmpdir(), `kilo-lab-e2e-${id}`);
  rmSync(dir, { recursive: true, force: true });
  const lab = await Lab.up(dir, {
    locations: 2,
    nodesPerLocation: 2,
    granularity: 'cross',
    natLocation: 2,
    peer: true,
    prefix: `kle${id}-`,
    ...o,
  });
  t.after(async () => {
    // On failure, the agents' logs say why; they go with the state directory.
    if (process.env['KILO_LAB_KEEP_LOGS']) spawnSync('cp', ['-r', dir, `${dir}-logs`]);
    await lab.down();
  });
  return lab;
}

/** `wg show kilo0 peers` of a node: public keys. */
export function wgPeers(lab: Lab, node: string): string[] {
  return run(inNodeNs(lab.node(node).ns, lab.runDir(node), ['wg', 'show', 'kilo0', 'peers']))
    .split('\n')
    .filter(Boolean);
}

/** The node's published WireGuard key. */
export async function nodeKey(lab: Lab, node: string): Promise<string> {
  const n = (await lab.api.list('nodes')).find((o) => o.metadata?.name === node);
  const key = n?.metadata?.annotations?.['kilo.squat.ai/key'];
  if (!key) throw new Error(`node ${node} has published no key`);
  return key;
}

export async function eventually(what: string, f: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let ok = false;
    try {
      ok = await f();
    } catch {
      ok = false;
    }
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * The fail-closed guard's blackholes on a node that have no route through kilo0 beside them (same
 * destination, same table; for the WireGuard network, the interface's connected route). With kilo0
 * up and the agent at rest there is none: a guard is planned only with the route it stands behind,
 * and one left behind would drop what the plan no longer sends through the tunnel (at a WireGuard
 * endpoint, the tunnel's own packets).
 */
export function guardsWithoutTunnel(ns: string): string[] {
  const routes = ['-4', '-6'].flatMap(
    (family) =>
      JSON.parse(run(['ip', '-n', ns, family, '-j', 'route', 'show', 'table', 'all'])) as {
        type?: string;
        dst: string;
        dev?: string;
        protocol?: string;
        table?: string;
      }[],
  );
  const at = (r: { dst: string; table?: string }) => `${r.dst} table ${r.table ?? 'main'}`;
  const tunnel = new Set(routes.filter((r) => r.dev === 'kilo0').map(at));
  return routes
    .filter((r) => r.type === 'blackhole' && r.protocol === '107' && !tunnel.has(at(r)))
    .map((r) => `blackhole ${at(r)}`);
}
