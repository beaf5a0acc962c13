/**
 * `node --import tsx bench/firewall.ts [nodes] [rounds] [granularity]`: applies one node's firewall
 * plan of a big cluster with each backend, iptables (iptables-restore) and nftables (one `nft -f`
 * transaction into Kilo's table), to the in-memory fakes and, when root, to the real ones in a fresh
 * network namespace, one after the other in the same run; prints times and writes for: first apply,
 * unchanged re-apply, a one-node change. Asserts nothing. The fakes run the same code with no process,
 * so they show the CPU cost; the rest is iptables or nft.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import type { Exec } from '../src/dataplane/exec.js';
import { netnsExec } from '../src/dataplane/exec.js';
import { createFakeFirewall } from '../src/dataplane/iptables/fake.js';
import { iptablesRulesOf } from '../src/dataplane/iptables/rules.js';
import { LinuxFirewallTables } from '../src/dataplane/iptables/tables.js';
import { createFakeNftables } from '../src/dataplane/nftables/fake.js';
import { nftRulesetOf } from '../src/dataplane/nftables/ruleset.js';
import { LinuxNftablesTables } from '../src/dataplane/nftables/tables.js';
import type { FirewallTables } from '../src/dataplane/types.js';
import { planOf } from '../src/mesh/compute.js';
import { defaultMeshOptions, type MeshOptions } from '../src/mesh/options.js';
import type { Granularity } from '../src/model/types.js';
import type { Firewall } from '../src/mesh/types.js';
import { parseCluster, type KubeObject } from '../src/model/parse.js';
import { Cidr } from '../src/net/cidr.js';

const nodes = Number(process.argv[2] ?? 700);
const rounds = Number(process.argv[3] ?? 5);
const granularity = (process.argv[4] ?? 'location') as Granularity;
const locations = 10;
const peers = 100;
const now = 1_764_662_400;

/** `nodes` nodes over 10 locations sharing a LAN each; 100 Peers with an IPv4 and an IPv6 allowed IP. */
function cluster(skip: number | null): KubeObject[] {
  const items: KubeObject[] = [];
  for (let i = 0; i < nodes; i++) {
    if (i === skip) continue;
    const loc = i % locations;
    const n = Math.floor(i / locations) + 1;
    items.push({
      kind: 'Node',
      metadata: {
        name: `node-${i}`,
        annotations: {
          'kilo.squat.ai/key': Buffer.alloc(32, i % 251).toString('base64'),
          'kilo.squat.ai/endpoint': `100.64.${i >> 8}.${i & 0xff}:51820`,
          'kilo.squat.ai/internal-ip': `172.16.${loc * 16 + (n >> 8)}.${n & 0xff}/20`,
          'kilo.squat.ai/last-seen': String(now),
          'kilo.squat.ai/location': `loc-${loc}`,
        },
      },
      spec: { podCIDR: `10.${42 + (i >> 8)}.${i & 0xff}.0/24` },
    });
  }
  for (let p = 0; p < peers; p++) {
    items.push({
      apiVersion: 'kilo.squat.ai/v1alpha1',
      kind: 'Peer',
      metadata: { name: `peer-${p}` },
      spec: {
        allowedIPs: [`10.5.${p}.1/32`, `fd05::${p + 1}/128`],
        publicKey: Buffer.alloc(32, 200 + (p % 50)).toString('base64'),
      },
    });
  }
  return items;
}

const options: MeshOptions = {
  ...defaultMeshOptions,
  granularity,
  encapsulate: 'always',
  iptablesForwardRules: true,
  serviceCIDRs: [Cidr.parse('10.43.0.0/16'), Cidr.parse('fd43::/112')],
};
const firewall = (skip: number | null): Firewall =>
  planOf(parseCluster(cluster(skip)), 'node-0', options, now).firewall;

/** Counts the processes that write (iptables-restore, `nft -f`) and the lines they were fed. */
function metered(exec: Exec) {
  const m = { restores: 0, lines: 0 };
  const wrapped: Exec = {
    ...exec,
    run: (argv, opts) => {
      if ((/restore$/.test(argv[0] ?? '') && !argv.includes('--test')) || (argv[0] === 'nft' && argv[1] === '-f')) {
        m.restores++;
        m.lines += (opts?.input ?? '').split('\n').filter((l) => l !== '').length;
      }
      return exec.run(argv, opts);
    },
  };
  return { exec: wrapped, m };
}

interface Row {
  step: string;
  ms: number[];
  writes: number;
  restores: number;
  lines: number;
}

async function measure(
  tables: FirewallTables,
  m: { restores: number; lines: number },
  a: Firewall,
  b: Firewall,
): Promise<Row[]> {
  const rows: Row[] = [
    { step: 'first apply', ms: [], writes: 0, restores: 0, lines: 0 },
    { step: 'unchanged re-apply', ms: [], writes: 0, restores: 0, lines: 0 },
    { step: 'one node removed', ms: [], writes: 0, restores: 0, lines: 0 },
  ];
  const plans = [a, a, b];
  for (let r = 0; r < rounds; r++) {
    await tables.cleanup();
    for (const [i, fw] of plans.entries()) {
      const before = { ...m };
      const t = performance.now();
      const ops = await tables.reconcile(fw);
      rows[i]!.ms.push(performance.now() - t);
      Object.assign(rows[i]!, {
        writes: ops.writes,
        restores: m.restores - before.restores,
        lines: m.lines - before.lines,
      });
    }
  }
  await tables.cleanup();
  return rows;
}

const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;

function print(title: string, rows: Row[]) {
  console.log(`\n## ${title} (median of ${rounds})\n`);
  console.log('| step | ms | writes | write runs | lines written |');
  console.log('|---|---:|---:|---:|---:|');
  for (const r of rows)
    console.log(`| ${r.step} | ${median(r.ms).toFixed(1)} | ${r.writes} | ${r.restores} | ${r.lines} |`);
}

const a = firewall(null);
const b = firewall(locations); // node-10: a member of node-0's location, so KILO-NAT, KILO-IPIP and FORWARD all change
const count = (fw: Firewall, f?: 4 | 6) =>
  iptablesRulesOf(fw).rules.filter((r) => f === undefined || r.family === f).length;
const elements = (fw: Firewall) => nftRulesetOf(fw).sets.reduce((n, s) => n + s.elements.length, 0);
console.log(
  `# Firewall apply: ${nodes} nodes, ${locations} locations, ${peers} Peers, ${granularity} granularity, node-0`,
);
console.log(`iptables: ${count(a)} rules (IPv4 ${count(a, 4)}, IPv6 ${count(a, 6)}); after the change ${count(b)}`);
console.log(`nftables: ${elements(a)} set elements; after the change ${elements(b)}`);

{
  const { netfilter, tables } = createFakeFirewall();
  const { exec, m } = metered(netfilter.exec());
  void tables;
  print('iptables, in-memory fake', await measure(new LinuxFirewallTables(exec), m, a, b));
}
{
  const fake = createFakeNftables();
  const { exec, m } = metered(fake.exec);
  print('nftables, in-memory fake', await measure(new LinuxNftablesTables(exec), m, a, b));
}

if (process.getuid?.() === 0 && spawnSync('ip', ['netns', 'add', `ktfwbench-${process.pid}`]).status === 0) {
  const ns = `ktfwbench-${process.pid}`;
  const runDir = execFileSync('mktemp', ['-d'], { encoding: 'utf8' }).trim();
  try {
    const { exec, m } = metered(netnsExec(ns, runDir));
    const tables = new LinuxFirewallTables(exec);
    print(
      `iptables (${(await tables.backend()).backend}) in a fresh network namespace`,
      await measure(tables, m, a, b),
    );
    print('nftables (inet kilo) in the same namespace', await measure(new LinuxNftablesTables(exec), m, a, b));
  } finally {
    spawnSync('ip', ['netns', 'del', ns]);
    spawnSync('rm', ['-rf', runDir]);
  }
} else {
  console.log('\n(real iptables skipped: needs root and network namespaces)');
}
