/**
 * `npm run bench [-- part…]`: prints figures, asserts nothing. Each size runs in its own process so
 * the peak memory belongs to that size alone. The parts are plan, routes, dataplane and lab; without
 * any named, all but routes (dataplane applies the same routes and more) run.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

const here = import.meta.dirname;
const node = (script: string, ...args: string[]) => nodeWith([], script, ...args);
const nodeWith = (v8: string[], script: string, ...args: string[]) =>
  execFileSync(process.execPath, [...v8, '--import', 'tsx', join(here, script), ...args], {
    encoding: 'utf8',
    maxBuffer: 1 << 28,
  });

/** A 64 MiB young generation, beside the defaults: fewer scavenges in a warm plan, but no shorter whole `kgctl plan` and more RSS (bin/kgctl runs without it). */
const agentV8 = ['--max-semi-space-size=64'];

interface PlanFigures {
  nodes: number;
  peers: number;
  routes: number;
  firewallRules: number;
  parseMs: number;
  computeMs: number;
  peakRssMiB: number;
}

const parts = ['plan', 'routes', 'dataplane', 'lab'];
const named = process.argv.slice(2);
for (const p of named)
  if (!parts.includes(p)) throw new Error(`unknown bench part ${JSON.stringify(p)}: ${parts.join(', ')}`);
const runs = (part: string) => (named.length > 0 ? named.includes(part) : part !== 'routes');

if (runs('plan')) planBench();

function planBench(): void {
  console.log('## Plan of one node, cross granularity, 20 locations, 10 Peers (median of 21 runs)\n');
  console.log(
    '| V8 flags | nodes | WireGuard peers | routes | iptables rules | parse ms | compute ms | peak RSS MiB |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
  const ratios: string[] = [];
  for (const v8 of [[], agentV8]) {
    const rows: PlanFigures[] = [];
    for (const size of [500, 2000, 5000]) {
      const r = JSON.parse(nodeWith(v8, 'plan.ts', String(size), '21')) as PlanFigures;
      rows.push(r);
      console.log(
        `| ${v8.join(' ') || 'defaults'} | ${r.nodes} | ${r.peers} | ${r.routes} | ${r.firewallRules} | ${r.parseMs.toFixed(1)} | ${r.computeMs.toFixed(1)} | ${r.peakRssMiB} |`,
      );
    }
    ratios.push(`${v8.join(' ') || 'defaults'}: ${(rows[2]!.computeMs / rows[0]!.computeMs).toFixed(1)}`);
  }
  console.log(
    `\ncompute 5,000 / 500 (10 = linear): ${ratios.join('; ')}; reference Go: ~25 ms at 2,000, ~56 ms at 5,000\n`,
  );
}

const skipDataplane = !!process.env['KILO_BENCH_SKIP_DATAPLANE'];
for (const part of skipDataplane ? [] : ['routes', 'dataplane', 'lab'].filter(runs)) {
  const extra = `${part}.ts`;
  try {
    process.stdout.write(node(extra));
  } catch (e) {
    console.log(`${extra}: skipped (${(e as Error).message.split('\n')[0]})`);
  }
}
