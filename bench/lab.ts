/**
 * `node --import tsx bench/lab.ts`: the lab with real agents. Per granularity, a fresh 3 × 3 lab
 * (3 locations of 3 nodes, all public, no Peer) and the time from the agents' start to every pod
 * reaching every pod; for cross and full, pod→pod TCP throughput (iperf3, 3 s) inside a location
 * and across locations, as a ratio to a plain veth between two namespaces measured in the same
 * run (wireguard-go here has no offloads: see ../shared/notes/dataplane-lab.md). Prints a
 * markdown table; asserts nothing. Needs root, network namespaces, wireguard-go and iperf3.
 */
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Lab } from '../packages/lab/src/lab.js';
import { inNs, ipBatch, run, runAsync, sleep } from '../packages/lab/src/sh.js';
import type { Granularity } from '../src/model/types.js';

const seconds = 3;

/** iperf3 from one namespace to a server in another; Gbit/s received. */
async function iperf(clientNs: string, serverNs: string, serverIP: string): Promise<number> {
  const server = spawn('ip', ['netns', 'exec', serverNs, 'iperf3', '-s', '-B', serverIP], { stdio: 'ignore' });
  let last = '';
  try {
    for (let i = 0; i < 50; i++) {
      const r = await runAsync(inNs(clientNs, ['iperf3', '-c', serverIP, '-t', String(seconds), '-J']), 60_000);
      const j = (r.stdout ? JSON.parse(r.stdout) : {}) as {
        error?: string;
        end?: { sum_received?: { bits_per_second: number } };
      };
      const bps = j.end?.sum_received?.bits_per_second;
      if (r.code === 0 && !j.error && bps !== undefined) return bps / 1e9;
      last = j.error ?? r.stderr.trim();
      await sleep(200); // the server is not listening yet
    }
    throw new Error(`iperf3 from ${clientNs} to ${serverIP} failed: ${last}`);
  } finally {
    server.kill('SIGKILL');
  }
}

/** Two namespaces joined by a veth: the path every pod→pod figure is compared to. */
async function vethBaseline(): Promise<number> {
  const [a, b] = [`klb${process.pid % 10000}-a`, `klb${process.pid % 10000}-b`];
  try {
    run(['ip', 'netns', 'add', a]);
    run(['ip', 'netns', 'add', b]);
    run(['ip', 'link', 'add', 'eth0', 'netns', a, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', b]);
    ipBatch(a, ['link set lo up', 'link set eth0 up', 'addr add 10.99.0.1/24 dev eth0']);
    ipBatch(b, ['link set lo up', 'link set eth0 up', 'addr add 10.99.0.2/24 dev eth0']);
    return await iperf(a, b, '10.99.0.2');
  } finally {
    for (const ns of [a, b]) run(['ip', 'netns', 'del', ns], { allowFail: true });
  }
}

interface Row {
  granularity: Granularity;
  /** Agents started → every agent has read the cluster (process start-up, load-bound). */
  startS: number;
  /** Every agent has read the cluster → every pod reaches every pod. */
  convergeS: number;
  inside?: number;
  across?: number;
}

async function measure(granularity: Granularity): Promise<Row> {
  const dir = join(tmpdir(), `kilo-lab-bench-${process.pid}-${granularity}`);
  rmSync(dir, { recursive: true, force: true });
  const lab = await Lab.up(dir, {
    locations: 3,
    nodesPerLocation: 3,
    granularity,
    natLocation: null,
    peer: false,
    prefix: `klb${process.pid % 10000}-`,
  });
  try {
    const started = Date.now();
    await lab.waitAgentsSynced(new Map(lab.nodes.map((n) => [n.name, 0])));
    const synced = Date.now();
    const { at } = await lab.converge(180_000);
    const row: Row = { granularity, startS: (synced - started) / 1000, convergeS: (at - synced) / 1000 };
    if (granularity === 'cross' || granularity === 'full') {
      const [a, b, c] = [lab.node('loc1-n1'), lab.node('loc1-n2'), lab.node('loc2-n1')];
      row.inside = await iperf(a.podNs, b.podNs, b.podIP);
      row.across = await iperf(a.podNs, c.podNs, c.podIP);
    }
    return row;
  } finally {
    await lab.down();
  }
}

const veth = await vethBaseline();
const rows: Row[] = [];
for (const g of ['location', 'full', 'cross', 'subnet'] as const) rows.push(await measure(g));
const ratio = (v?: number) => (v === undefined ? '–' : `${v.toFixed(2)} Gbit/s (${(v / veth).toFixed(3)})`);
console.log(
  `## The lab: 3 locations × 3 nodes, real agents and wireguard-go (pod→pod iperf3 ${seconds} s; ratio to a plain veth, ${veth.toFixed(2)} Gbit/s in this run)\n`,
);
console.log(
  '| granularity | agents started → all read the cluster | → every pod reaches every pod | pod→pod inside a location | pod→pod across locations |',
);
console.log('|---|---:|---:|---:|---:|');
for (const r of rows)
  console.log(
    `| ${r.granularity} | ${r.startS.toFixed(1)} s | ${r.convergeS.toFixed(1)} s | ${ratio(r.inside)} | ${ratio(r.across)} |`,
  );
console.log('\nInside a location cross routes in the clear over the LAN; full sends everything through WireGuard.\n');
