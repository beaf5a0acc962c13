/**
 * A large route batch is split in two `ip -batch` runs at the same time (a first kg apply at 5,000
 * nodes writes ~10,000 routes, which is kernel time per route): the same routes, the same failures
 * named at the same ops, and no route whose outcome depends on another line split from it.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Exec } from '../../src/dataplane/exec.js';
import { nextTurn } from '../../src/dataplane/reconcile.js';
import type { RouteOp } from '../../src/dataplane/routes/diff.js';
import { parseRoutes } from '../../src/dataplane/routes/iproute.js';
import { PartialApplyError } from '../../src/dataplane/routes/errors.js';
import { IprouteRoutes, linuxRoutingTables } from '../../src/dataplane/routes/linux.js';
import { batchesOf } from '../../src/dataplane/routes/schedule.js';
import type { KernelRoute, KernelRule } from '../../src/dataplane/routes/state.js';
import { kiloTable, type PlanRoute, type PlanRule } from '../../src/mesh/types.js';
import { skipNoNetns, type TestNamespace } from '../helpers/netns.js';
import { routesNamespace } from './namespaces.js';
import { ipExec } from './routes-exec.js';

const route = (dst: string, extra: Partial<KernelRoute> = {}): KernelRoute => ({
  family: dst.includes(':') ? 6 : 4,
  dst,
  table: 254,
  metric: dst.includes(':') ? 1024 : 0,
  gw: null,
  dev: 'kilo0',
  src: null,
  onlink: false,
  type: 'unicast',
  protocol: 107,
  ...extra,
});
const rule = (dst: string): KernelRule => ({
  family: dst.includes(':') ? 6 : 4,
  priority: 1107,
  src: null,
  dst,
  iif: null,
  fwmark: null,
  invert: false,
  table: 1107,
});
const add = (r: KernelRoute): RouteOp => ({ kind: 'route', action: 'add', route: r });
const del = (r: KernelRoute): RouteOp => ({ kind: 'route', action: 'del', route: r });
/** `n` onlink routes over kilo0, 10.60.i.0/24 via 10.4.0.2. */
const onlinkRoutes = (n: number, from = 0): KernelRoute[] =>
  Array.from({ length: n }, (_, i) =>
    route(`10.${60 + ((from + i) >> 8)}.${(from + i) & 255}.0/24`, { gw: '10.4.0.2', onlink: true }),
  );

const planRoute = (dst: string, gw: string | null, dev: PlanRoute['dev']): PlanRoute => ({
  dst,
  gw,
  dev,
  src: null,
  table: 'main',
  onlink: gw !== null,
});

const indices = (phases: ReturnType<typeof batchesOf>) => phases.map((p) => p.map((b) => b.indices));

describe('batchesOf', () => {
  test('under the threshold: one batch, then the IPv6 rules', () => {
    const ops: RouteOp[] = [
      ...onlinkRoutes(3).map(add),
      { kind: 'rule', action: 'add', rule: rule('fd00::3/128') },
      { kind: 'rule', action: 'add', rule: rule('192.168.1.3/32') },
    ];
    assert.deepEqual(indices(batchesOf(ops, 4)), [[[0, 1, 2, 4]], [[3]]]);
    assert.deepEqual(batchesOf(ops, 4)[1]![0]!.options, ['-6']);
  });

  test('split in two: deletes and the routes at their keys in the first half, in order; rules added after', () => {
    const routes = onlinkRoutes(8);
    const ops: RouteOp[] = [
      { kind: 'rule', action: 'del', rule: rule('192.168.1.9/32') },
      { kind: 'rule', action: 'del', rule: rule('fd00::9/128') },
      del(route('10.9.0.0/24')),
      del({ ...routes[5]!, dev: 'priv0' }),
      ...routes.map(add), // 4..11; 9 is at a deleted key
      { kind: 'rule', action: 'add', rule: rule('192.168.1.3/32') },
      { kind: 'rule', action: 'add', rule: rule('fd00::3/128') },
    ];
    const phases = batchesOf(ops, 4);
    // 7 free routes: the first 4 (rounded up) stay in the first batch, the other 3 run beside it.
    assert.deepEqual(indices(phases), [
      [
        [0, 2, 3, 4, 5, 6, 7, 9],
        [8, 10, 11],
      ],
      [[12]],
      [[1, 13]],
    ]);
    const all = indices(phases)
      .flat(2)
      .sort((a, b) => a - b);
    assert.deepEqual(all, [...ops.keys()], 'every op exactly once');
  });

  test('a route with a gateway that is not onlink depends on the routes: nothing is split', () => {
    const ops = [...onlinkRoutes(8).map(add), add(route('10.70.0.0/24', { gw: '10.61.0.1', dev: 'kilo0' }))];
    assert.deepEqual(indices(batchesOf(ops, 4)), [[[...ops.keys()]]]);
    // Plain device routes (a Peer's allowed IPs) are free.
    const plain = [...onlinkRoutes(8).map(add), add(route('10.70.0.0/24'))];
    assert.equal(batchesOf(plain, 4)[0]!.length, 2);
  });
});

async function ourRoutes(exec: Exec): Promise<string[]> {
  const shown = await Promise.all(
    ([4, 6] as const).map(async (f) =>
      parseRoutes(
        (await exec.run(['ip', '-N', '-j', `-${f}`, 'route', 'show', 'table', 'all', 'proto', '107'])).stdout,
        f,
        107,
      ),
    ),
  );
  return shown.flat().map((r) => `${r.dst} ${r.gw ?? '-'} ${r.dev} ${r.onlink}`);
}

describe('iproute2: a split batch applies what one batch applies', { skip: skipNoNetns }, () => {
  /** Applies `ops` in a fresh namespace, split from `splitAt` free routes. */
  const applied = async (ops: readonly RouteOp[], splitAt: number, before: readonly RouteOp[] = []) => {
    const ns = routesNamespace('ktsp');
    try {
      const exec = ipExec(ns);
      assert.deepEqual((await new IprouteRoutes(exec).apply(before)).failures, []);
      const batches: string[] = [];
      const counting: Exec = {
        ...exec,
        run: (argv, opts) => {
          // The routes' batches: next hops (nexthops.ts) are written in their own, before and after.
          if (argv.includes('-batch') && !opts?.input?.startsWith('nexthop ')) batches.push(argv.join(' '));
          return exec.run(argv, opts);
        },
      };
      const result = await new IprouteRoutes(counting, undefined, splitAt).apply(ops);
      return { failures: result.failures, routes: (await ourRoutes(exec)).sort(), batches: batches.length };
    } finally {
      ns.destroy();
    }
  };

  test('the same routes and the same failures, named at the same ops', async () => {
    const stale = onlinkRoutes(3, 900);
    const routes = onlinkRoutes(600);
    const ops: RouteOp[] = [
      ...stale.map(del),
      // Routes the kernel refuses, one in each half: a device that is not there, a source that is not local.
      ...routes.slice(0, 200).map(add),
      add(route('10.80.0.0/24', { dev: 'gone0' })),
      ...routes.slice(200).map(add),
      add(route('10.80.1.0/24', { src: '192.0.2.1' })),
      add(route('fd80::/64')),
    ];
    const one = await applied(ops, Infinity, stale.map(add));
    const split = await applied(ops, 100, stale.map(add));
    assert.equal(one.batches, 1);
    assert.equal(split.batches, 2, 'split in two');
    assert.deepEqual(
      split.failures.map((f) => f.index),
      [203, 604],
    );
    assert.match(split.failures[0]!.message, /Cannot find device/);
    assert.match(split.failures[1]!.message, /prefsrc|source/i);
    assert.deepEqual(split.failures, one.failures);
    assert.deepEqual(split.routes, one.routes);
    assert.equal(split.routes.length, 601, 'the good routes, none of the stale ones');
  });

  test('a route through a gateway another line adds is not split from it', async () => {
    // The gateway's route ends the first half after 400 other lines; the route through it would start
    // the second half at once, and the kernel would refuse it ("Nexthop has invalid gateway").
    const ops: RouteOp[] = [
      ...onlinkRoutes(400).map(add),
      add(route('10.90.0.0/24', { dev: 'priv0' })),
      add(route('10.91.0.0/24', { gw: '10.90.0.1', dev: 'priv0' })),
      ...onlinkRoutes(400, 400).map(add),
    ];
    const r = await applied(ops, 100);
    assert.deepEqual(r.failures, []);
    assert.ok(r.routes.includes('10.91.0.0/24 10.90.0.1 priv0 false'), 'the dependent route is in');
    assert.equal(r.batches, 1);
  });
});

describe('iproute2: a first apply prepared while the interfaces are set up', { skip: skipNoNetns }, () => {
  const devices = { kilo: 'kilo0', private: 'priv0', tunnel: null };
  const plan: PlanRoute[] = [
    ...Array.from({ length: 50 }, (_, i) => planRoute(`10.60.${i}.0/24`, '10.4.0.2', 'kilo')),
    planRoute('10.5.0.1/32', null, 'kilo'),
    planRoute('10.42.3.0/24', '192.168.1.3', 'private'),
    planRoute('10.42.9.0/24', '192.168.1.9', 'tunnel'), // no tunnel on this machine: a problem
  ];
  const rules: PlanRule[] = [{ src: '10.42.1.0/24', dst: '192.168.1.3/32', iif: null, table: kiloTable }];

  /**
   * A first apply in a fresh namespace: `between` (someone else), then a reconcile, given a read taken
   * before (`ahead`, which finds none of Kilo's routes: its diff is made before `after`) or reading.
   */
  const firstApply = async (ahead: boolean, between: (ns: TestNamespace) => void = () => {}) => {
    const ns = routesNamespace('ktsp');
    try {
      const exec = ipExec(ns);
      const tables = linuxRoutingTables(exec);
      const read = ahead ? await tables.readUnparsed() : undefined;
      if (read) assert.equal(read.empty, true);
      between(ns);
      const options = read ? { once: true, read: await tables.readUnparsed(), after: nextTurn() } : { once: true };
      const err = await tables.reconcile(plan, rules, devices, options).then(
        () => assert.fail('the tunnel route is a problem'),
        (e: unknown) => e as PartialApplyError,
      );
      assert.ok(err instanceof PartialApplyError, String(err));
      return {
        writes: [...err.ops.details].sort(),
        failures: err.failures,
        routes: (await ourRoutes(exec)).sort(),
      };
    } finally {
      ns.destroy();
    }
  };

  test('the same writes and problems as without; routes someone added meanwhile are diffed, not written over blindly', async () => {
    const plain = await firstApply(false);
    assert.equal(plain.writes.length, 53, plain.writes.join('\n'));
    assert.deepEqual(await firstApply(true), plain);
    // Between prepare and reconcile one of Kilo's routes appeared with another gateway, and a stray one.
    const meanwhile = (ns: TestNamespace) =>
      ns.sh(
        'ip route add 10.60.7.0/24 via 10.4.0.9 dev kilo0 onlink proto 107 && ip route add 10.61.0.0/24 dev kilo0 proto 107',
      );
    const raced = await firstApply(true, meanwhile);
    assert.deepEqual(raced, await firstApply(false, meanwhile));
    assert.ok(
      raced.writes.includes('replace route 10.60.7.0/24 via 10.4.0.2 dev kilo0 onlink'),
      raced.writes.join('\n'),
    );
    assert.ok(raced.writes.includes('del route 10.61.0.0/24 dev kilo0'), raced.writes.join('\n'));
    assert.deepEqual(raced.routes, plain.routes);
  });
});
