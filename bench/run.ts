/**
 * `npm run bench`: prints figures, asserts nothing. Each size runs in its own process so the
 * peak memory belongs to that size alone.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

const here = import.meta.dirname;
const node = (script: string, ...args: string[]) =>
  execFileSync(process.execPath, ['--import', 'tsx', join(here, script), ...args], { encoding: 'utf8', maxBuffer: 1 << 28 });

interface PlanFigures {
  nodes: number;
  peers: number;
  routes: number;
  firewallRules: number;
  parseMs: number;
  computeMs: number;
  peakRssMiB: number;
}

console.log('## Plan of one node, cross granularity, 20 locations, 10 Peers (median of 21 runs)\n');
console.log('| nodes | WireGuard peers | routes | iptables rules | parse ms | compute ms | peak RSS MiB |');
console.log('|---:|---:|---:|---:|---:|---:|---:|');
const rows: PlanFigures[] = [];
for (const size of [500, 2000, 5000]) {
  const r = JSON.parse(node('plan.ts', String(size), '21')) as PlanFigures;
  rows.push(r);
  console.log(`| ${r.nodes} | ${r.peers} | ${r.routes} | ${r.firewallRules} | ${r.parseMs.toFixed(1)} | ${r.computeMs.toFixed(1)} | ${r.peakRssMiB} |`);
}
const ratio = rows[2]!.computeMs / rows[0]!.computeMs;
console.log(`\ncompute 5,000 / 500 = ${ratio.toFixed(1)} (10 = linear); reference Go: ~25 ms at 2,000, ~56 ms at 5,000\n`);

for (const extra of process.env['KILO_BENCH_SKIP_DATAPLANE'] ? [] : ['dataplane.ts', 'lab.ts']) {
  try {
    process.stdout.write(node(extra));
  } catch (e) {
    console.log(`${extra}: skipped (${(e as Error).message.split('\n')[0]})`);
  }
}
