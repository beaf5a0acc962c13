/**
 * Kilo's own Go mesh code as the reference for `bench:scale`: the kilo-plan harness (../shared/kilo,
 * its README), run side by side with `kgctl plan` on the same cluster in the same run. It reads a
 * cluster as JSON on standard input; with `"only": "plan"` it computes one node's WireGuard
 * configuration, routes, rules and iptables rules and prints a one-line summary. Not part of the
 * product: found outside the tree, unpacked into the benchmark's temporary directory.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { KubeObject } from '../src/model/parse.js';

/**
 * The harness, unpacked into `dir`: KILO_BENCH_KILO_PLAN (the binary, or its .gz), else the newest
 * kilo-plan-*.gz in a `shared/kilo` beside the checkout or its worktree's parent. Null when none.
 */
export function kiloPlanBinary(root: string, dir: string): string | null {
  const given = process.env['KILO_BENCH_KILO_PLAN'];
  const candidates = given
    ? [given]
    : [join(root, '..', 'shared', 'kilo'), join(root, '..', '..', 'shared', 'kilo')]
        .filter((d) => existsSync(d))
        .flatMap((d) =>
          readdirSync(d)
            .filter((f) => /^kilo-plan-.*\.gz$/.test(f))
            .map((f) => join(d, f)),
        );
  const source = candidates.find((c) => existsSync(c));
  if (!source) return null;
  const bytes = readFileSync(source);
  const binary = join(dir, 'kilo-plan');
  writeFileSync(binary, source.endsWith('.gz') ? gunzipSync(bytes) : bytes);
  chmodSync(binary, 0o755);
  // A binary for another machine, or a broken one: no reference rather than a failed benchmark.
  return spawnSync(binary, { input: '{}', encoding: 'utf8' }).error ? null : binary;
}

/**
 * The harness's input for the cluster `items` (as bench/generate.ts writes it: the location in
 * topology.kubernetes.io/region, every node ready), planned for `hostname` in `granularity` without
 * encapsulation, as `kgctl plan HOSTNAME --cluster FILE` plans it.
 */
export function kiloPlanInput(items: KubeObject[], hostname: string, granularity: string): string {
  const nodes = [];
  const peers = [];
  for (const o of items) {
    const a = o.metadata?.annotations ?? {};
    if (o.kind === 'Node')
      nodes.push({
        name: o.metadata!.name,
        location: o.metadata!.labels?.['topology.kubernetes.io/region'] ?? '',
        internalIP: a['kilo.squat.ai/internal-ip'] ?? '',
        subnet: (o['spec'] as { podCIDR?: string } | undefined)?.podCIDR ?? '',
        publicKey: a['kilo.squat.ai/key'] ?? '',
        endpoint: a['kilo.squat.ai/endpoint'] ?? '',
      });
    else if (o.kind === 'Peer') {
      const spec = o['spec'] as { allowedIPs: string[]; publicKey: string; persistentKeepalive?: number };
      peers.push({
        name: o.metadata!.name,
        publicKey: spec.publicKey,
        allowedIPs: spec.allowedIPs,
        persistentKeepalive: spec.persistentKeepalive ?? 0,
      });
    }
  }
  return JSON.stringify({
    granularity,
    hostname,
    subnet: '10.4.0.0/16',
    only: 'plan',
    encapsulate: 'never',
    local: true,
    nodes,
    peers,
  });
}
