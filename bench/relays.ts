/**
 * `npm run bench:relays`: what relays cost at scale (issue 34). The same cross cluster (bench/generate.ts:
 * KILO_BENCH_RELAY_NODES nodes, default 5,000, in 20 locations, every node run by a kilo-ts agent)
 * twice: every pair reachable, and every node publishing kilo.squat.ai/unreachable with as many peers
 * of other locations as the annotation holds (16: the most a cluster can publish; see below). Run in
 * the same process, in turns, so the machine's load falls on both alike:
 * - `kgctl plan -o json` of node-00000 (a location leader, so a relay too), the whole process under
 *   /usr/bin/time: wall and CPU seconds, min and median;
 * - the agent's pass: the CPU seconds of what a pass computes from the parsed cluster (topology, plan
 *   with its relays, the direct-path probe targets, `src/agent/relay-detect.ts`), median of several
 *   passes in warm code, as the long-running agent runs it.
 * KILO_BENCH_RELAY_NODES, KILO_BENCH_RUNS, KILO_BENCH_RELAY_VIEWER. Prints figures, asserts nothing.
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
import { maxUnreachable } from '../src/model/relay-annotations.js';
import { generateCluster } from './generate.js';

const root = join(import.meta.dirname, '..');
const kgctl = join(root, 'bin', 'kgctl');
const nodes = Number(process.env['KILO_BENCH_RELAY_NODES'] ?? 5000);
const runs = Number(process.env['KILO_BENCH_RUNS'] ?? 5);
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
 * Every node lists `maxUnreachable` nodes of other locations, spread by a fixed linear congruential
 * sequence (the same every run). A pair is relayed when either end lists the other.
 */
function withUnreachable(items: KubeObject[]): KubeObject[] {
  const names = items.filter((o) => o.kind === 'Node').map((o) => o.metadata!.name!);
  let seed = 12345;
  const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % names.length;
  return items.map((o, i) => {
    if (o.kind !== 'Node') return o;
    const listed = new Set<string>();
    while (listed.size < maxUnreachable) {
      const j = next();
      if (j % locations !== i % locations) listed.add(names[j]!);
    }
    const annotations = { ...o.metadata!.annotations!, [Annotation.unreachable]: [...listed].sort().join(',') };
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
  const now = Math.floor(Date.now() / 1000);
  // As agent.ts does: one topology, its plan, and path-health's targets from the same topology.
  const t = topologyOf(cluster, viewer, options, now);
  planNode(t, options);
  directAddresses(t);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1e6;
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
  const t = topologyOf(parsed.relayed, viewer, options, Math.floor(Date.now() / 1000));
  const pairs = relayedPairs(t);
  const wireGuardPairs = (nodes * (nodes - 1)) / 2 - (locations * ((nodes / locations) * (nodes / locations - 1))) / 2;
  const mine = pairs.filter((p) => p.a === viewer || p.b === viewer || p.via === viewer);
  console.log(
    `## Relays at ${nodes} nodes, cross, ${locations} locations (load average ${load()} at start)\n\n` +
      `Relayed: ${pairs.length} pairs of ${wireGuardPairs} WireGuard pairs (${((100 * pairs.length) / wireGuardPairs).toFixed(2)} %; ` +
      `every node lists ${maxUnreachable} peers, the most kilo.squat.ai/unreachable holds), ` +
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
