/**
 * `node --import tsx bench/failover.ts [--runs N] [--annotation-runs N]`: location-leader
 * failover in the lab (2 locations × 3 nodes, location granularity). For each of four faults
 * of location 2's leader — agent SIGKILLed, uplink down, ip_forward off, FORWARD DROP — a pod of location 1
 * pings a pod of location 2 every 100 ms; the outage is the pings lost × 100 ms. N runs of each
 * with --leader-election=lease (none with --runs 0), then with Kilo's annotation rule for comparison (a run that
 * does not recover within the timeout counts the whole timeout). Prints p50 and max per fault
 * and mode, with the machine's load; asserts nothing. Needs root, network namespaces and
 * wireguard-go.
 */
import { rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  faults,
  leaseHolder,
  measureFailover,
  plannedLeader,
  repair,
  summary,
  type Outage,
} from '../packages/lab/src/failover.js';
import { Lab } from '../packages/lab/src/lab.js';
import { sleep } from '../packages/lab/src/sh.js';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
};
const runs = arg('runs', 5);
const annotationRuns = arg('annotation-runs', runs);
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

async function mode(election: 'lease' | 'annotation', n: number, timeoutMs: number): Promise<Outage[]> {
  const dir = join(tmpdir(), `kilo-failover-${process.pid}-${election}`);
  rmSync(dir, { recursive: true, force: true });
  const lab = await Lab.up(dir, {
    locations: 2,
    nodesPerLocation: 3,
    granularity: 'location',
    natLocation: null,
    peer: false,
    prefix: `kfo${process.pid % 1000}${election[0]}-`,
  });
  const out: Outage[] = [];
  try {
    await lab.restartAgents('location', [`--leader-election=${election}`]);
    await lab.converge(180_000);
    for (let i = 0; i < n; i++) {
      for (const fault of faults) {
        if (election === 'lease') {
          const deadline = Date.now() + 60_000;
          while (!((await leaseHolder(lab, 2)) && plannedLeader(lab, 2)) && Date.now() < deadline) await sleep(500);
        }
        const r = await measureFailover(lab, fault, { victim: 2, from: 1, timeoutMs });
        out.push(r);
        console.error(
          `${election} run ${i + 1} ${fault}: ${r.oldLeader} → ${r.newLeader ?? '-'} outage ${r.outageMs} ms${r.recovered ? '' : ' (not recovered)'} (load ${load()})`,
        );
        repair(lab, r.oldLeader, fault);
        await sleep(3000);
        await lab.converge(180_000);
      }
    }
  } catch (e) {
    if (process.env['KILO_FAILOVER_KEEP']) {
      console.error(`kept the lab for inspection: ${dir} (kg lab down --state ${dir})`);
      throw e;
    }
    await lab.down();
    throw e;
  }
  await lab.down();
  return out;
}

const lease = runs > 0 ? await mode('lease', runs, 60_000) : [];
const annotation = annotationRuns > 0 ? await mode('annotation', annotationRuns, 120_000) : [];
console.log(`| mode | fault | runs | p50 outage | max outage | not recovered |`);
console.log(`| ---- | ----- | ---- | ---------- | ---------- | ------------- |`);
for (const [name, rs] of [
  ['lease', lease],
  ['annotation', annotation],
] as const) {
  for (const fault of faults) {
    const of = rs.filter((r) => r.fault === fault);
    if (of.length === 0) continue;
    const s = summary(of.map((r) => r.outageMs));
    console.log(
      `| ${name} | ${fault} | ${of.length} | ${(s.p50 / 1000).toFixed(1)} s | ${(s.max / 1000).toFixed(1)} s | ${of.filter((r) => !r.recovered).length} |`,
    );
  }
}
console.log(`\nload average at the end: ${load()}`);
