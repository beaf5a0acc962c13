/**
 * `npm run bench:relays`: what relays cost at scale (issue 34). The same cross cluster (bench/generate.ts:
 * KILO_BENCH_RELAY_NODES nodes, default 5,000, in 20 locations, every node run by a kilo-ts agent)
 * twice: every pair reachable, and KILO_BENCH_RELAY_PERCENT (default 5) % of the WireGuard pairs
 * unreachable, both ends of each listing the other in kilo.squat.ai/unreachable (issue 34's case).
 * Run in the same process, in turns, so the machine's load falls on both alike:
 * - `kgctl plan -o json` of node-00000 (a location leader, so a relay too), the whole process under
 *   /usr/bin/time: wall and CPU seconds, min and median;
 * - the agent's pass: the CPU seconds of what a pass computes from the parsed cluster (topology, plan
 *   with its relays, the direct-path probe targets, `src/agent/relay-detect.ts`), median of several
 *   passes in warm code, as the long-running agent runs it.
 * KILO_BENCH_RELAY_NODES, KILO_BENCH_RELAY_PERCENT, KILO_BENCH_RUNS, KILO_BENCH_RELAY_VIEWER. Prints
 * figures, asserts nothing.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { directAddresses } from '../src/agent/relay-detect.js';
import { topologyOf } from '../src/mesh/compute.js';
import { planNode } from '../src/mesh/plan.js';
import { defaultMeshOptions } from '../src/mesh/options.js';
import { relayedPairs } from '../src/mesh/relays.js';
import { Annotation } from '../src/model/annotations.js';
import { parseCluster, type KubeObject } from '../src/model/parse.js';
import { formatUnreachable } from '../src/model/relay-annotations.js';
import { generateCluster } from './generate.js';

const root = join(import.meta.dirname, '..');
const kgctl = join(root, 'bin', 'kgctl');
const nodes = Number(process.env['KILO_BENCH_RELAY_NODES'] ?? 5000);
const runs = Number(process.env['KILO_BENCH_RUNS'] ?? 5);
const percent = Number(process.env['KILO_BENCH_RELAY_PERCENT'] ?? 5);
const locations = 20;
// KILO_BENCH_RELAY_VIEWER: the node planned (node-00000 leads its location, so it relays too; node-00021 does not).
const viewer = process.env['KILO_BENCH_RELAY_VIEWER'] ?? 'node-00000';
const lastSeen = Math.floor(Date.now() / 1000);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

/**
 * `percent` % of the pairs of nodes in different locations (the WireGuard pairs of cross) are
 * unreachable, picked by a hash of the pair (the same every run); both ends list each other, as
 * both ends' probes find. Every list fits the annotation (formatUnreachable would cut it otherwise:
 * checked).
 */
function withUnreachable(items: KubeObject[]): KubeObject[] {
  const names = items.filter((o) => o.kind === 'Node').map((o) => o.metadata!.name!);
  const lists: string[][] = names.map(() => []);
  const bound = Math.round((percent / 100) * 2 ** 32);
  for (let i = 0; i < names.length; i++)
    for (let j = i + 1; j < names.length; j++) {
      if (i % locations === j % locations) continue;
      // A fixed mix of the pair's numbers (a multiply-xorshift hash), uniform enough for a sample.
      let h = Math.imul(i, 0x9e3779b1) ^ Math.imul(j, 0x85ebca77);
      h = Math.imul(h ^ (h >>> 15), 0x2c1b3c6d);
      h = (h ^ (h >>> 12)) >>> 0;
      if (h < bound) {
        lists[i]!.push(names[j]!);
        lists[j]!.push(names[i]!);
      }
    }
  let i = 0;
  return items.map((o) => {
    if (o.kind !== 'Node') return o;
    const listed = lists[i++]!;
    const value = formatUnreachable(listed);
    if (value === null) return o;
    if (value.split(',').length !== listed.length)
      throw new Error(`${o.metadata!.name}: ${listed.length} unreachable peers do not fit kilo.squat.ai/unreachable`);
    const annotations = { ...o.metadata!.annotations!, [Annotation.unreachable]: value };
    return { ...o, metadata: { ...o.metadata, annotations } };
  });
}

/** The generated cluster, every node announcing a kilo-ts agent's mesh flags (Kilo's agents take no part in relays). */
function kiloTsCluster(): KubeObject[] {
  return generateCluster(nodes, locations, 10, lastSeen).map((o) =>
    o.kind === 'Node'
      ? {
          ...o,
          metadata: {
            ...o.metadata,
            annotations: { ...o.metadata!.annotations!, [Annotation.meshFlags]: '{"port":51820}' },
          },
        }
      : o,
  );
}

interface Whole {
  seconds: number;
  cpuSeconds: number;
}

function timedKgctl(file: string, dir: string): Whole {
  const out = join(dir, 'time.txt');
  const r = spawnSync(
    '/usr/bin/time',
    ['-f', '%e %U %S', '-o', out, kgctl, 'plan', viewer, '--cluster', file, '-o', 'json'],
    { encoding: 'utf8', maxBuffer: 1 << 30, timeout: 300_000 },
  );
  if (r.status !== 0) throw new Error(`kgctl plan failed: ${r.stderr.trim().split('\n').at(-1)}`);
  const [s, user, sys] = readFileSync(out, 'utf8').trim().split('\n').at(-1)!.split(' ').map(Number);
  return { seconds: s!, cpuSeconds: user! + sys! };
}

/** One pass's computation from the parsed cluster: CPU seconds. */
function passCpu(cluster: ReturnType<typeof parseCluster>): number {
  const options = { ...defaultMeshOptions, granularity: 'cross' as const };
  const before = process.cpuUsage();
  // The time readiness is judged at: the cluster's, as kgctl plan judges it (a pass minutes into the run is still of that cluster).
  const now = lastSeen;
  // As agent.ts does: one topology, its plan, and path-health's targets from the same topology.
  const t = topologyOf(cluster, viewer, options, now);
  planNode(t, options);
  directAddresses(t);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1e6;
}

/** The fewest and most names a node of the cluster lists as unreachable, and the longest value in bytes. */
function listedRange(items: KubeObject[]): string {
  const values = items
    .filter((o) => o.kind === 'Node')
    .map((o) => o.metadata!.annotations![Annotation.unreachable] ?? '');
  const counts = values.map((v) => (v === '' ? 0 : v.split(',').length));
  return `${Math.min(...counts)}-${Math.max(...counts)} (at most ${Math.max(...values.map((v) => v.length))} bytes)`;
}

const dir = mkdtempSync(join(tmpdir(), 'kts-bench-relays-'));
try {
  const reachable = kiloTsCluster();
  const relayed = withUnreachable(reachable);
  const files = { reachable: join(dir, 'reachable.json'), relayed: join(dir, 'relayed.json') };
  writeFileSync(files.reachable, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: reachable }));
  writeFileSync(files.relayed, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: relayed }));
  const parsed = { reachable: parseCluster(reachable), relayed: parseCluster(relayed) };
  const options = { ...defaultMeshOptions, granularity: 'cross' as const };
  const t = topologyOf(parsed.relayed, viewer, options, lastSeen);
  const pairs = relayedPairs(t);
  const wireGuardPairs = (nodes * (nodes - 1)) / 2 - (locations * ((nodes / locations) * (nodes / locations - 1))) / 2;
  const mine = pairs.filter((p) => p.a === viewer || p.b === viewer || p.via === viewer);
  console.log(
    `## Relays at ${nodes} nodes, cross, ${locations} locations (load average ${load()} at start)\n\n` +
      `Relayed: ${pairs.length} pairs of ${wireGuardPairs} WireGuard pairs (${((100 * pairs.length) / wireGuardPairs).toFixed(2)} %; ` +
      `${percent} % asked; a node lists ${listedRange(relayed)} peers), ` +
      `${pairs.filter((p) => p.via === null).length} with no relay; ${viewer} takes part in ${mine.length} ` +
      `(relay of ${mine.filter((p) => p.via === viewer).length}).\n`,
  );
  const whole = { reachable: [] as Whole[], relayed: [] as Whole[] };
  const pass = { reachable: [] as number[], relayed: [] as number[] };
  // Warm the pass code on both before measuring, as a running agent's is.
  for (let i = 0; i < 2; i++) for (const k of ['reachable', 'relayed'] as const) passCpu(parsed[k]);
  for (let i = 0; i < runs; i++)
    for (const k of ['reachable', 'relayed'] as const) {
      whole[k].push(timedKgctl(files[k], dir));
      pass[k].push(passCpu(parsed[k]));
    }
  console.log('| cluster | kgctl plan min s | median s | median CPU s | agent pass median CPU ms |');
  console.log('|---|---:|---:|---:|---:|');
  for (const k of ['reachable', 'relayed'] as const) {
    const w = whole[k].map((r) => r.seconds);
    console.log(
      `| ${k === 'reachable' ? 'every pair reachable' : `${pairs.length} pairs relayed`} | ${Math.min(...w).toFixed(2)} | ${median(w).toFixed(2)} | ${median(whole[k].map((r) => r.cpuSeconds)).toFixed(2)} | ${(median(pass[k]) * 1000).toFixed(0)} |`,
    );
  }
  const ratio = (f: (k: 'reachable' | 'relayed') => number) => (f('relayed') / f('reachable')).toFixed(2);
  console.log(
    `\nrelayed / reachable: kgctl plan wall ${ratio((k) => median(whole[k].map((r) => r.seconds)))}×, CPU ${ratio((k) => median(whole[k].map((r) => r.cpuSeconds)))}×; agent pass CPU ${ratio((k) => median(pass[k]))}× (${runs} runs each, in turns; load average ${load()} at the end)`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
