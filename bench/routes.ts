/**
 * `node --import tsx bench/routes.ts [routes]`: Kilo's route reconcile against the kernel in a fresh
 * network namespace (root only), and for comparison a plain `ip -batch` of the same lines and the
 * in-memory model. Prints wall times and write counts; asserts nothing.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { hostExec, type Exec } from '../src/dataplane/exec.js';
import { FakeKernel, fakeRoutingTables } from '../src/dataplane/routes/fake.js';
import { diffState } from '../src/dataplane/routes/diff.js';
import { defaultOwnership, desiredState } from '../src/dataplane/routes/state.js';
import { renderOp } from '../src/dataplane/routes/iproute.js';
import { linuxRoutingTables } from '../src/dataplane/routes/linux.js';
import type { KiloRoutingTables } from '../src/dataplane/routes/reconciler.js';
import type { DeviceNames } from '../src/dataplane/types.js';
import { kiloTable, type PlanRoute, type PlanRule } from '../src/mesh/types.js';
import { AddressMemo } from '../src/net/memo.js';

export interface Step {
  ms: number;
  writes: number;
}

export interface RoutesBenchResult {
  routes: number;
  rules: number;
  kernel: { first: Step; changed: Step; unchanged: Step; readMs: number; cleanup: Step; plainBatchMs: number } | null;
  /** Plan to kernel form and diff against an equal state: the pure part of a reconcile. */
  computeMs: number;
  fake: { first: Step; changed: Step; unchanged: Step };
}

const devices: DeviceNames = { kilo: 'kilo0', private: 'priv0', tunnel: null };

/**
 * `count` routes shaped like a leader's in a big cluster: half over kilo0 onlink with a source,
 * a quarter in the clear over priv0, a quarter in table 1107; one rule per 50 routes.
 */
function plan(count: number, variant: 'A' | 'B'): { routes: PlanRoute[]; rules: PlanRule[] } {
  const routes: PlanRoute[] = [];
  for (let i = 0; i < count; i++) {
    // Plan B: three routes gone, three with another gateway, three new ones.
    if (variant === 'B' && i < 3) continue;
    const dst = `10.${64 + (i >> 16)}.${(i >> 8) & 0xff}.${i & 0xff}/32`;
    const changed = variant === 'B' && i >= 3 && i < 6;
    if (i % 2 === 0) {
      routes.push({
        dst,
        gw: `10.4.${(i >> 8) & 0xff}.${(i % 250) + (changed ? 1 : 2)}`,
        dev: 'kilo',
        src: '192.168.1.1',
        table: 'main',
        onlink: true,
      });
    } else {
      const table = i % 4 === 1 ? 'main' : kiloTable;
      routes.push({
        dst,
        gw: `192.168.1.${changed ? 250 : 2 + (i % 200)}`,
        dev: 'private',
        src: null,
        table,
        onlink: true,
      });
    }
  }
  if (variant === 'B')
    for (let i = 0; i < 3; i++)
      routes.push({
        dst: `10.99.0.${i}/32`,
        gw: '192.168.1.7',
        dev: 'private',
        src: null,
        table: 'main',
        onlink: true,
      });
  const rules: PlanRule[] = [];
  for (let i = 0; i < count / 50; i++)
    rules.push({ src: '10.42.1.0/24', dst: `192.168.${2 + (i >> 8)}.${i & 0xff}/32`, table: kiloTable, iif: null });
  return { routes, rules };
}

async function timed(f: () => Promise<{ writes: number }>): Promise<Step> {
  const t0 = process.hrtime.bigint();
  const { writes } = await f();
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, writes };
}

async function steps(tables: KiloRoutingTables, a: ReturnType<typeof plan>, b: ReturnType<typeof plan>) {
  return {
    first: await timed(() => tables.reconcile(a.routes, a.rules, devices)),
    changed: await timed(() => tables.reconcile(b.routes, b.rules, devices)),
    unchanged: await timed(() => tables.reconcile(b.routes, b.rules, devices)),
  };
}

/** `ip -n NS …` for every ip command (no mount namespace needed: no wireguard-go here). */
function nsExec(ns: string): Exec {
  const host = hostExec();
  return { ...host, run: (argv, opts) => host.run(argv[0] === 'ip' ? ['ip', '-n', ns, ...argv.slice(1)] : argv, opts) };
}

function withNamespace<T>(name: string, f: (exec: Exec) => Promise<T>): Promise<T> {
  execFileSync('ip', ['netns', 'add', name]);
  const cleanup = () => spawnSync('ip', ['netns', 'del', name]);
  try {
    const sh = (cmd: string) => execFileSync('ip', ['netns', 'exec', name, 'sh', '-c', cmd]);
    sh(
      'ip link set lo up && ip link add priv0 type veth peer name priv1 && ip link add kilo0 type veth peer name kilo1 && ' +
        'ip addr add 192.168.1.1/24 dev priv0 && ip addr add 10.4.0.1/16 dev kilo0 && ' +
        'for l in priv0 priv1 kilo0 kilo1; do ip link set $l up; done',
    );
  } catch (e) {
    cleanup();
    throw e;
  }
  return f(nsExec(name)).finally(cleanup);
}

export async function benchRoutes(count = 10_000): Promise<RoutesBenchResult> {
  const a = plan(count, 'A');
  const b = plan(count, 'B');
  let computeMs = Infinity;
  // Kept across the runs as a routes reconciler keeps it across its reconciles.
  const memo = new AddressMemo();
  for (let i = 0; i < 3; i++) {
    // Best of three: the first run pays for JIT warm-up and fills the memo.
    const t0 = process.hrtime.bigint();
    memo.nextPass();
    const d = desiredState(b.routes, b.rules, devices, defaultOwnership, memo);
    diffState(d, { routes: d.routes.map((r) => ({ ...r })), rules: d.rules.map((r) => ({ ...r })) });
    computeMs = Math.min(computeMs, Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const result: RoutesBenchResult = {
    routes: a.routes.length,
    rules: a.rules.length,
    kernel: null,
    computeMs,
    fake: await fakeSteps(a, b),
  };
  if (process.getuid?.() !== 0) return result;
  const base = `ktbench-${process.pid}`;
  const kernel = await withNamespace(`${base}-k`, async (exec) => {
    const tables = linuxRoutingTables(exec);
    const s = await steps(tables, a, b);
    const readMs = (await timed(async () => ({ writes: (await tables.read()).routes.length }))).ms;
    return { ...s, readMs, cleanup: await timed(() => tables.cleanup()) };
  });
  // The same adds as one plain `ip -batch`, the floor any reconcile over iproute2 can reach.
  const lines = (() => {
    const d = desiredState(a.routes, a.rules, devices);
    return [
      ...d.routes.map((route) => renderOp({ kind: 'route', action: 'add', route })),
      ...d.rules.map((rule) => renderOp({ kind: 'rule', action: 'add', rule })),
    ];
  })();
  const plainBatchMs = await withNamespace(`${base}-p`, async (exec) => {
    const t0 = process.hrtime.bigint();
    await exec.run(['ip', '-batch', '-'], { input: `${lines.join('\n')}\n`, timeoutMs: 120_000 });
    return Number(process.hrtime.bigint() - t0) / 1e6;
  });
  result.kernel = { ...kernel, plainBatchMs };
  return result;
}

async function fakeSteps(a: ReturnType<typeof plan>, b: ReturnType<typeof plan>) {
  const m = new FakeKernel();
  m.addLink('priv0', { addresses: ['192.168.1.1/24'] });
  m.addLink('kilo0', { addresses: ['10.4.0.1/16'] });
  return steps(fakeRoutingTables(m), a, b);
}

function print(r: RoutesBenchResult): void {
  const row = (label: string, s: Step) => console.log(`| ${label} | ${s.ms.toFixed(0)} ms | ${s.writes} |`);
  console.log(`## Routes: ${r.routes} routes, ${r.rules} rules\n`);
  console.log('| step | wall time | writes |\n|---|---|---|');
  if (r.kernel) {
    row('kernel: first reconcile', r.kernel.first);
    row('kernel: plan differing by 9 routes', r.kernel.changed);
    row('kernel: same plan again', r.kernel.unchanged);
    console.log(`| kernel: of which reading Kilo's routes and rules | ${r.kernel.readMs.toFixed(0)} ms | |`);
    console.log(`| of which plan → kernel form → diff (pure) | ${r.computeMs.toFixed(0)} ms | |`);
    row('kernel: cleanup', r.kernel.cleanup);
    console.log(
      `| kernel: plain \`ip -batch\` of the same adds | ${r.kernel.plainBatchMs.toFixed(0)} ms | ${r.routes + r.rules} |`,
    );
  } else console.log('| kernel | skipped (needs root) | |');
  row('in-memory model: first reconcile', r.fake.first);
  row('in-memory model: plan differing by 9 routes', r.fake.changed);
  row('in-memory model: same plan again', r.fake.unchanged);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  print(await benchRoutes(Number(process.argv[2] ?? 10_000)));
}
