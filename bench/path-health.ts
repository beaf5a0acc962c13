/**
 * Path health's share of a join's pass: `node --import tsx bench/path-health.ts [N]` (default
 * 20,000). One node of a generated cross cluster (20 locations, as bench/scale.ts) is told of ten
 * topologies, each one node bigger than the last, three times over: a join-heavy window. Prints
 * one JSON line (median and min ms per new topology); asserts nothing.
 */
import { Prober } from '../src/agent/health-prober.js';
import { PathHealth } from '../src/agent/path-health.js';
import { topologyOf } from '../src/mesh/compute.js';
import { defaultMeshOptions } from '../src/mesh/options.js';
import type { Topology } from '../src/mesh/topology.js';
import type { KubeObject } from '../src/model/parse.js';
import { parseCluster } from '../src/model/parse.js';
import { snapshotNow } from '../src/model/ready.js';
import { generateCluster } from './generate.js';

const size = Number(process.argv[2] ?? 20_000);
const joins = 10;
const objects = generateCluster(size + joins, 20, 10);
const nodes = objects.filter((o: KubeObject) => o.kind === 'Node');
const rest = objects.filter((o: KubeObject) => o.kind !== 'Node');
const options = { ...defaultMeshOptions, granularity: 'cross' as const };
const local = nodes[Math.floor(size / 2)]!.metadata!.name!;
const topologies: Topology[] = [];
for (let i = 0; i < joins; i++) {
  const cluster = parseCluster([...nodes.slice(0, size + i), ...rest]);
  topologies.push(topologyOf(cluster, local, options, snapshotNow(cluster.nodes)));
}
const health = new PathHealth({
  prober: new Prober(() => Promise.resolve(true)),
  mesh: { encapsulate: 'never', local: true },
  log: { warn: () => {}, info: () => {} },
});
const times: number[] = [];
for (let round = 0; round < 3; round++)
  for (const t of topologies) {
    const t0 = performance.now();
    health.planned(t, null);
    times.push(performance.now() - t0);
  }
times.sort((a, b) => a - b);
const s = health.summary().pairs;
console.log(
  JSON.stringify({
    nodes: size,
    pairs: s.ok + s.failing + s.unknown,
    plannedMedianMs: Math.round(times[times.length >> 1]! * 10) / 10,
    plannedMinMs: Math.round(times[0]! * 10) / 10,
  }),
);
