/**
 * The plan of one node in a generated cross cluster: `node --import tsx bench/plan.ts N`.
 * Prints one JSON line; bench/run.ts runs one process per size so peak memory is per size.
 */
import { iptablesRulesOf } from '../src/dataplane/iptables/rules.js';
import { planOf } from '../src/mesh/compute.js';
import { defaultMeshOptions } from '../src/mesh/options.js';
import { parseCluster } from '../src/model/parse.js';
import { snapshotNow } from '../src/model/ready.js';
import { generateCluster } from './generate.js';

const size = Number(process.argv[2] ?? 500);
const runs = Number(process.argv[3] ?? 21);
const objects = JSON.parse(JSON.stringify(generateCluster(size, 20, 10)));

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e6;

const parseTimes: number[] = [];
let cluster = parseCluster(objects);
for (let i = 0; i < runs; i++) {
  const t0 = process.hrtime.bigint();
  cluster = parseCluster(objects);
  parseTimes.push(ms(t0));
}
const options = { ...defaultMeshOptions, granularity: 'cross' as const };
const now = snapshotNow(cluster.nodes);
const target = cluster.nodes[Math.floor(size / 2)]!.name;
const computeTimes: number[] = [];
let plan = planOf(cluster, target, options, now);
// Warm up the JIT first: the agent computes plans all day, the first one is not typical.
for (let i = 0; i < 5; i++) plan = planOf(cluster, target, options, now);
for (let i = 0; i < runs; i++) {
  const t0 = process.hrtime.bigint();
  plan = planOf(cluster, target, options, now);
  computeTimes.push(ms(t0));
}
console.log(
  JSON.stringify({
    nodes: size,
    peers: plan.peers.length,
    routes: plan.routes.length,
    firewallRules: iptablesRulesOf(plan.firewall).rules.length,
    parseMs: median(parseTimes),
    computeMs: median(computeTimes),
    peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
  }),
);
