/**
 * `node --import tsx bench/dataplane.ts`: one node's cross plan with 1,000 WireGuard peers and
 * ~10,000 routes applied to a fresh network namespace with the library (reconcile over
 * linuxDataplane and netnsExec, wireguard-go as the device), then a plan that differs by one node,
 * then the same plan again. The baseline, measured in the same run: one `ip -batch` of the same
 * routes plus one `wg setconf` of the same peers into another fresh namespace. Prints a markdown
 * table (median of `rounds` rounds, default 3: `node --import tsx bench/dataplane.ts [rounds]`);
 * asserts nothing. Needs root and network namespaces.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { linuxDataplane } from '../src/agent/linux-dataplane.js';
import { netnsExec, type Exec } from '../src/dataplane/exec.js';
import { reconcile, type Dataplane, type ReconcileResult } from '../src/dataplane/reconcile.js';
import { DataplaneMemory } from '../src/dataplane/cache.js';
import { renderFamily } from '../src/dataplane/iptables/render.js';
import { iptablesRulesOf } from '../src/dataplane/iptables/rules.js';
import { renderOp } from '../src/dataplane/routes/iproute.js';
import { desiredState } from '../src/dataplane/routes/state.js';
import type { DeviceNames } from '../src/dataplane/types.js';
import { createWireGuardDevice } from '../src/dataplane/wireguard/device.js';
import { planOf } from '../src/mesh/compute.js';
import { defaultMeshOptions } from '../src/mesh/options.js';
import type { Plan } from '../src/mesh/types.js';
import { parseCluster, type KubeObject } from '../src/model/parse.js';
import { generatePrivateKey } from '../src/wireguard/keys.js';
import { generateCluster } from './generate.js';

// 1,000 nodes over 50 locations: node-00000 shares its location with 19 others, so it has 980
// remote nodes (a WireGuard peer and 2 routes each); 20 Peers with 400 allowed IPs each bring the
// peers to 1,000 and the routes to ~10,000.
const nodes = 1000;
const locations = 50;
const peers = 20;
const ipsPerPeer = 400;
const self = 'node-00000';
const now = 1_764_662_400;
const devices: DeviceNames = { kilo: 'kilo0', private: 'priv0', tunnel: null };
const mtu = 1420;

function cluster(): KubeObject[] {
  const objects = generateCluster(nodes, locations, peers, now);
  for (const o of objects) {
    if (o.kind !== 'Peer') continue;
    const p = Number(String(o.metadata?.name).split('-')[1]);
    (o.spec as { allowedIPs: string[] }).allowedIPs = Array.from(
      { length: ipsPerPeer },
      (_, i) => `10.${128 + (p >> 4)}.${((p & 15) << 4) | (i >> 8)}.${i & 255}/32`,
    );
  }
  return objects;
}

const options = { ...defaultMeshOptions, granularity: 'cross' as const, encapsulate: 'never' as const };
const planFor = (objects: KubeObject[]): Plan => planOf(parseCluster(objects), self, options, now);

/** Counts the processes a step runs and the time spent waiting on them, by program. */
function metered(exec: Exec) {
  const m = { processes: 0, byProgram: new Map<string, { n: number; ms: number }>() };
  const wrapped: Exec = {
    ...exec,
    run: async (argv, opts) => {
      const t0 = performance.now();
      try {
        return await exec.run(argv, opts);
      } finally {
        const name =
          argv[0] === 'ip' && argv.includes('-batch') ? 'ip -batch' : argv[0] === 'wg' ? `wg ${argv[1]}` : argv[0]!;
        const e = m.byProgram.get(name) ?? { n: 0, ms: 0 };
        e.n++;
        e.ms += performance.now() - t0;
        m.byProgram.set(name, e);
        m.processes++;
      }
    },
  };
  return { exec: wrapped, m, reset: () => ((m.processes = 0), m.byProgram.clear()) };
}

function median<T>(xs: T[], by: (x: T) => number): T {
  return [...xs].sort((x, y) => by(x) - by(y))[Math.floor(xs.length / 2)]!;
}

interface Namespace {
  name: string;
  runDir: string;
  exec: Exec;
  destroy(): void;
}

/** A fresh namespace with the node's private NIC holding its internal IP. */
function namespace(name: string, internalIP: string): Namespace {
  execFileSync('ip', ['netns', 'add', name]);
  const runDir = mkdtempSync(join(tmpdir(), `${name}-`));
  const destroy = () => {
    // wireguard-go runs detached; this namespace is ours, so whatever runs in it is too.
    const pids = spawnSync('ip', ['netns', 'pids', name], { encoding: 'utf8' })
      .stdout.split('\n')
      .filter((l) => /^\d+$/.test(l));
    for (const pid of pids) spawnSync('kill', ['-9', pid]);
    spawnSync('ip', ['netns', 'del', name]);
    rmSync(runDir, { recursive: true, force: true });
  };
  try {
    execFileSync('ip', [
      'netns',
      'exec',
      name,
      'sh',
      '-c',
      `ip link set lo up && ip link add priv0 type veth peer name priv1 && ip addr add ${internalIP} dev priv0 && ip link set priv0 up && ip link set priv1 up`,
    ]);
  } catch (e) {
    destroy();
    throw e;
  }
  return { name, runDir, exec: netnsExec(name, runDir), destroy };
}

interface Row {
  step: string;
  ms: number;
  result?: ReconcileResult;
  processes: number;
  profile: string;
  areas?: Record<string, number>;
}

/** Wraps each part of the dataplane to time it inside one reconcile. */
function timedParts(dp: Dataplane, areas: Record<string, number>): Dataplane {
  const time =
    <T>(area: string, f: () => Promise<T>) =>
    async () => {
      const t0 = performance.now();
      try {
        return await f();
      } finally {
        areas[area] = (areas[area] ?? 0) + performance.now() - t0;
      }
    };
  return {
    device: Object.assign(Object.create(dp.device) as typeof dp.device, {
      ensure: () => time('wg', () => dp.device.ensure())(),
      configure: (c: Parameters<typeof dp.device.configure>[0], o?: Parameters<typeof dp.device.configure>[1]) =>
        time('wg', () => dp.device.configure(c, o))(),
    }),
    links: {
      reconcile: (d, s, o) => time('links', () => dp.links.reconcile(d, s, o))(),
      read: (d) => dp.links.read(d),
    },
    routes: {
      reconcile: (r, u, d, o) => time('routes', () => dp.routes.reconcile(r, u, d, o))(),
      cleanup: () => dp.routes.cleanup(),
      readUnparsed: () => dp.routes.readUnparsed(),
    },
    firewall: {
      reconcile: (f, o) => time('iptables', () => dp.firewall.reconcile(f, o))(),
      cleanup: () => dp.firewall.cleanup(),
      read: () => dp.firewall.read(),
      readRelayed: () => dp.firewall.readRelayed(),
    },
  };
}

function profileOf(m: ReturnType<typeof metered>['m']): string {
  return [...m.byProgram].map(([k, v]) => `${k} ×${v.n} ${v.ms.toFixed(0)} ms`).join(', ');
}

async function measureLibrary(a: Plan, b: Plan, privateKey: string): Promise<Row[]> {
  const ns = namespace(`ktbench-dp-${process.pid}`, '172.16.0.1/20');
  try {
    const { exec, m, reset } = metered(ns.exec);
    const dp = linuxDataplane(exec, { interfaceName: 'kilo0', createInterface: true, implementation: 'userspace' });
    const rows: Row[] = [];
    let t0 = performance.now();
    await dp.device.ensure();
    rows.push({
      step: 'start wireguard-go (not in the steps below)',
      ms: performance.now() - t0,
      processes: m.processes,
      profile: profileOf(m),
    });
    // The agent reads the machine at start, on its resync timer and after any error or foreign
    // change the routing monitor reports (full read), and trusts its last write for a cluster event.
    // Each change step runs several times in a row (alternating plans, so each run is a one-node
    // change again): the agent's code is warm after its first reconcile, and the row is the median.
    const steps: [string, Plan[], boolean][] = [
      ['first apply (full read)', [a], false],
      ['plan differing by one node (cluster event: trusts the last write; median of 5)', [b, a, b, a, b], true],
      ['same plan again (cluster event; median of 3)', [b, b, b], true],
      ['plan differing by one node (full read, as on resync; median of 3)', [a, b, a], false],
      ['same plan again (full read, as on resync; median of 3)', [a, a, a], false],
    ];
    const memory = new DataplaneMemory();
    for (const [step, plans, trustLastWrite] of steps) {
      const samples: Row[] = [];
      for (const plan of plans) {
        reset();
        const areas: Record<string, number> = {};
        t0 = performance.now();
        if (!trustLastWrite) memory.forget();
        const result = await reconcile(timedParts(dp, areas), { plan, privateKey, mtu, devices }, { memory });
        const ms = performance.now() - t0;
        if (result.errors.length > 0) throw new Error(`${step}: ${result.errors.map((e) => e.message).join('; ')}`);
        samples.push({ step, ms, result, processes: m.processes, profile: profileOf(m), areas });
      }
      rows.push(median(samples, (r) => r.ms));
    }
    await dp.device.destroy();
    return rows;
  } finally {
    ns.destroy();
  }
}

/** The same content with the plainest tools: one `ip -batch`, one `wg setconf`. */
async function measureBaseline(
  plan: Plan,
  privateKey: string,
): Promise<{ ipMs: number; wgMs: number; iptablesMs: number; routes: number; peers: number }> {
  const ns = namespace(`ktbench-base-${process.pid}`, '172.16.0.1/20');
  const device = createWireGuardDevice(ns.exec, { name: 'kilo0', implementation: 'userspace' });
  try {
    await device.ensure();
    await ns.exec.run(['ip', 'link', 'set', 'kilo0', 'up']);
    await ns.exec.run(['ip', 'addr', 'add', plan.wireGuardIP!, 'dev', 'kilo0']);
    const d = desiredState(plan.routes, plan.rules, devices);
    const lines = [
      ...d.routes.map((route) => renderOp({ kind: 'route', action: 'add', route })),
      ...d.rules.map((rule) => renderOp({ kind: 'rule', action: 'add', rule })),
    ];
    const conf = join(ns.runDir, 'bench.conf');
    const ini = [`[Interface]`, `PrivateKey = ${privateKey}`, `ListenPort = ${plan.listenPort}`];
    for (const p of plan.peers) {
      ini.push('', '[Peer]', `PublicKey = ${p.publicKey}`, `AllowedIPs = ${p.allowedIPs.join(', ')}`);
      if (p.endpoint) ini.push(`Endpoint = ${p.endpoint}`);
      if (p.persistentKeepalive) ini.push(`PersistentKeepalive = ${p.persistentKeepalive}`);
    }
    writeFileSync(conf, `${ini.join('\n')}\n`, { mode: 0o600 });
    let t0 = performance.now();
    await ns.exec.run(['ip', '-batch', '-'], { input: `${lines.join('\n')}\n`, timeoutMs: 120_000 });
    const ipMs = performance.now() - t0;
    t0 = performance.now();
    await ns.exec.run(['wg', 'setconf', 'kilo0', conf], { timeoutMs: 120_000 });
    const wgMs = performance.now() - t0;
    rmSync(conf, { force: true });
    // Not part of the baseline, but part of what an apply writes: the same firewall, as one
    // iptables-restore per family of exactly the input kilo-ts renders for an empty machine.
    const empty = {
      nat: '*nat\n:POSTROUTING ACCEPT [0:0]\nCOMMIT\n',
      filter: '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\nCOMMIT\n',
    };
    t0 = performance.now();
    for (const family of [4, 6] as const) {
      const { input } = renderFamily(family, iptablesRulesOf(plan.firewall), empty);
      if (input)
        await ns.exec.run([family === 4 ? 'iptables-restore' : 'ip6tables-restore', '--noflush', '-w'], {
          input,
          timeoutMs: 120_000,
        });
    }
    const iptablesMs = performance.now() - t0;
    return { ipMs, wgMs, iptablesMs, routes: d.routes.length + d.rules.length, peers: plan.peers.length };
  } finally {
    await device.destroy().catch(() => undefined);
    ns.destroy();
  }
}

const fmt = (ms: number) => `${ms.toFixed(0)} ms`;

if (process.getuid?.() !== 0) {
  console.log('## Dataplane: skipped (needs root and network namespaces)\n');
  process.exit(0);
}
const objects = cluster();
const a = planFor(objects);
// The node that sorts last: dropping it moves no other segment's WireGuard IP.
const dropped = `node-${String(nodes - 1).padStart(5, '0')}`;
const b = planFor(objects.filter((o) => o.metadata?.name !== dropped));
const privateKey = generatePrivateKey();
// Each round uses fresh namespaces; library and baseline alternate so both see the same load.
// The row shown is the round with the median wall time for that step.
const rounds = Number(process.argv[2] ?? 3);
const libraryRuns: Row[][] = [];
const baseRuns: Awaited<ReturnType<typeof measureBaseline>>[] = [];
for (let i = 0; i < rounds; i++) {
  libraryRuns.push(await measureLibrary(a, b, privateKey));
  baseRuns.push(await measureBaseline(a, privateKey));
}
const rows = libraryRuns[0]!.map((_, i) =>
  median(
    libraryRuns.map((run) => run[i]!),
    (r) => r.ms,
  ),
);
const base = median(baseRuns, (r) => r.ipMs + r.wgMs);
const baseMs = base.ipMs + base.wgMs;
const baseFirewallMs = median(baseRuns, (r) => r.iptablesMs).iptablesMs;

console.log(
  `## Dataplane: ${self}, cross, ${a.peers.length} WireGuard peers, ${a.routes.length} routes, ${a.rules.length} rules, ${iptablesRulesOf(a.firewall).rules.length} iptables rules\n`,
);
console.log(
  `wireguard-go in a fresh network namespace; the one-node change drops ${dropped} (another location). Median of ${rounds} rounds.\n`,
);
console.log(
  '| step | wall time | writes | WireGuard +/−/~ | routes | iptables | links | time in wg / routes / iptables | processes |',
);
console.log('|---|---:|---:|---|---:|---:|---:|---|---|');
for (const r of rows) {
  const x = r.result;
  const wg = x ? `${x.wireGuard.added.length}/${x.wireGuard.removed.length}/${x.wireGuard.updated.length}` : '';
  const areas = r.areas
    ? `${fmt(r.areas['wg'] ?? 0)} / ${fmt(r.areas['routes'] ?? 0)} / ${fmt(r.areas['iptables'] ?? 0)}`
    : '';
  console.log(
    `| ${r.step} | ${fmt(r.ms)} | ${x?.writes ?? ''} | ${wg} | ${x?.routes.writes ?? ''} | ${x?.firewall.writes ?? ''} | ${x?.links.writes ?? ''} | ${areas} | ${r.processes}: ${r.profile} |`,
  );
}
console.log(
  `| baseline: \`ip -batch\` of the same ${base.routes} routes + \`wg setconf\` of the same ${base.peers} peers | ${fmt(baseMs)} (${fmt(base.ipMs)} + ${fmt(base.wgMs)}) | ${base.routes + base.peers} | | | | | | 2 |`,
);
console.log(
  `| for comparison: \`iptables-restore\` of the same ${iptablesRulesOf(a.firewall).rules.length} iptables rules (both families) | ${fmt(baseFirewallMs)} | | | | | | | 2 |`,
);

const [, first, one, same, oneFull, sameFull] = rows;
const removed = a.routes.length - b.routes.length;
console.log('\nTargets (reported, not asserted):\n');
console.log(
  `- first apply within 2× of the baseline: ${(first!.ms / baseMs).toFixed(2)}× (${fmt(first!.ms)} vs ${fmt(baseMs)}); ` +
    `counting the firewall on both sides: ${(first!.ms / (baseMs + baseFirewallMs)).toFixed(2)}× (vs ${fmt(baseMs + baseFirewallMs)})`,
);
console.log(
  `- one-node change touches only that node's peer and routes, under 100 ms: ${fmt(one!.ms)}; ` +
    `WireGuard ${one!.result!.wireGuard.removed.length} removed / ${one!.result!.wireGuard.added.length} added / ${one!.result!.wireGuard.updated.length} updated, ` +
    `${one!.result!.routes.writes} route writes (the node had ${removed}), ${one!.result!.firewall.writes} iptables writes`,
);
console.log(
  `- the same one-node change found by a full read (resync): ${fmt(oneFull!.ms)}, ${oneFull!.result!.writes} writes`,
);
console.log(
  `- unchanged plan costs zero writes: ${same!.result!.writes} writes, ${fmt(same!.ms)} (cluster event); ` +
    `${sameFull!.result!.writes} writes, ${fmt(sameFull!.ms)} (full read)\n`,
);
