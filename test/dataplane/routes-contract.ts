import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { PartialApplyError } from '../../src/dataplane/routes/errors.js';
import { KiloRoutingTables, type RouteKernel } from '../../src/dataplane/routes/reconciler.js';
import { describeRoute, describeRule, type KernelRoute, type KernelRule } from '../../src/dataplane/routes/state.js';
import type { DeviceNames, RoutingWritten } from '../../src/dataplane/types.js';
import { lastWrite } from './last-write.js';
import {
  hostTable,
  kiloTable,
  wireGuardMark,
  type PlanGuardRoute,
  type PlanRoute,
  type PlanRule,
} from '../../src/mesh/types.js';

/**
 * One machine with Kilo's stand-in interfaces, the same for the kernel (a namespace) and the model:
 *   priv0  up, 192.168.1.1/24 and fd00::1/64  (the private interface)
 *   kilo0  up, 10.4.0.1/16                     (stands in for the WireGuard interface)
 */
export interface RoutesHarness {
  kernel: RouteKernel;
  /** Installs a route or rule as another program or an admin would (any protocol or priority). */
  addRoute(r: KernelRoute): Promise<void>;
  addRule(r: KernelRule): Promise<void>;
  /** Removes the first route with this key and protocol, as someone else would. */
  deleteRoute(r: KernelRoute): Promise<void>;
  /** Deletes an interface, as an operator would (or wireguard-go's exit does to its tun). */
  deleteLink(name: string): Promise<void>;
  /** Every route of every protocol in every table, except the kernel's own (connected, local). */
  allRoutes(): Promise<KernelRoute[]>;
  /** Every rule of both families, in kernel order. */
  allRules(): Promise<KernelRule[]>;
  destroy(): void;
}

const P = 107;
const devices: DeviceNames = { kilo: 'kilo0', private: 'priv0', tunnel: null };

const r = (dst: string, gw: string | null, dev: PlanRoute['dev'], extra: Partial<PlanRoute> = {}): PlanRoute => ({
  dst,
  gw,
  dev,
  src: null,
  table: 'main',
  onlink: false,
  ...extra,
});
const rule = (src: string | null, dst: string | null, iif: 'kilo' | null = null): PlanRule => ({
  src,
  dst,
  iif,
  table: kiloTable,
});

// A leader's plan: routes over kilo (onlink, with src), in the clear over the private interface,
// encapsulation table 1107, a Peer's allowed IP without gateway, and IPv6.
const planA = {
  routes: [
    r('10.42.2.0/24', '10.4.0.2', 'kilo', { onlink: true, src: '192.168.1.1' }),
    r('192.168.2.5/32', '10.4.0.2', 'kilo', { onlink: true, src: '192.168.1.1' }),
    r('10.42.3.0/24', '192.168.1.3', 'private', { onlink: true }),
    r('10.42.4.0/24', '192.168.1.4', 'private'),
    r('10.5.0.0/24', null, 'kilo'),
    r('192.168.1.3/32', '192.168.1.3', 'private', { onlink: true, table: kiloTable }),
    r('fd42:2::/64', 'fd00::2', 'private'),
    r('fd43::/64', null, 'kilo', { table: kiloTable }),
  ],
  rules: [
    rule('10.42.1.0/24', '192.168.1.3/32'),
    rule(null, '192.168.1.3/32', 'kilo'),
    rule('fd42:1::/64', 'fd00::3/128'),
  ],
};

// What `ip route` shows for plan A, written out by hand.
const routesA = [
  'route 10.42.2.0/24 via 10.4.0.2 dev kilo0 src 192.168.1.1 onlink',
  'route 192.168.2.5/32 via 10.4.0.2 dev kilo0 src 192.168.1.1 onlink',
  'route 10.42.3.0/24 via 192.168.1.3 dev priv0 onlink',
  'route 10.42.4.0/24 via 192.168.1.4 dev priv0',
  'route 10.5.0.0/24 dev kilo0',
  'route 192.168.1.3/32 via 192.168.1.3 dev priv0 onlink table 1107',
  'route fd42:2::/64 via fd00::2 dev priv0',
  'route fd43::/64 dev kilo0 table 1107',
].sort();
const rulesA = [
  'rule from 10.42.1.0/24 to 192.168.1.3/32 lookup 1107 priority 1107',
  'rule from all to 192.168.1.3/32 iif kilo0 lookup 1107 priority 1107',
  'rule -6 from fd42:1::/64 to fd00::3/128 lookup 1107 priority 1107',
].sort();

// Plan B: one route gone, one with a new gateway, one new; one rule gone, one new.
const planB = {
  routes: [
    ...planA.routes.filter((x) => x.dst !== '10.42.4.0/24' && x.dst !== '10.42.3.0/24'),
    r('10.42.3.0/24', '192.168.1.5', 'private', { onlink: true }),
    r('10.42.5.0/24', '192.168.1.5', 'private', { onlink: true }),
  ],
  rules: [
    rule('10.42.1.0/24', '192.168.1.3/32'),
    rule('fd42:1::/64', 'fd00::3/128'),
    rule('10.42.1.0/24', '192.168.1.5/32'),
  ],
};
const routesB = [
  ...routesA.filter((x) => !x.startsWith('route 10.42.4.0/24') && !x.startsWith('route 10.42.3.0/24')),
  'route 10.42.3.0/24 via 192.168.1.5 dev priv0 onlink',
  'route 10.42.5.0/24 via 192.168.1.5 dev priv0 onlink',
].sort();
const rulesB = [
  'rule from 10.42.1.0/24 to 192.168.1.3/32 lookup 1107 priority 1107',
  'rule -6 from fd42:1::/64 to fd00::3/128 lookup 1107 priority 1107',
  'rule from 10.42.1.0/24 to 192.168.1.5/32 lookup 1107 priority 1107',
].sort();

const kernelRoute = (dst: string, dev: string, extra: Partial<KernelRoute> = {}): KernelRoute => ({
  family: dst.includes(':') ? 6 : 4,
  dst,
  table: 254,
  metric: dst.includes(':') ? 1024 : 0,
  gw: null,
  dev,
  src: null,
  onlink: false,
  type: 'unicast',
  protocol: P,
  ...extra,
});
const kernelRule = (
  src: string | null,
  dst: string | null,
  priority: number,
  table: number,
  extra: Partial<KernelRule> = {},
): KernelRule => ({
  family: (src ?? dst ?? '').includes(':') ? 6 : 4,
  priority,
  src,
  dst,
  iif: null,
  fwmark: null,
  invert: false,
  table,
  ...extra,
});

// Not Kilo's: other protocols, other priorities, tables Kilo does not use.
const foreignRoutes = [
  kernelRoute('198.18.0.0/24', 'priv0', { protocol: 4 }),
  kernelRoute('198.18.1.0/24', 'priv0', { protocol: 4, table: kiloTable }),
  kernelRoute('198.18.2.0/24', 'priv0', { protocol: 186, gw: '192.168.1.9' }),
  kernelRoute('2001:db8::/64', 'priv0', { protocol: 4 }),
];
const foreignRules = [
  kernelRule('198.18.0.0/24', null, 500, 100),
  kernelRule('2001:db8::/64', null, 500, 100),
  kernelRule(null, '198.18.3.0/24', 1108, kiloTable),
];

interface Counted {
  tables: KiloRoutingTables;
  /** How many times changes were sent to the machine (one `ip -batch` each on Linux). */
  applies(): number;
  /** How many times the machine was read (`ip route show` and `ip rule show` on Linux). */
  reads(): number;
}

function counted(kernel: RouteKernel): Counted {
  let applies = 0;
  let reads = 0;
  const wrapped: RouteKernel = {
    read: (owner) => {
      reads++;
      return kernel.read(owner);
    },
    apply: (ops) => {
      applies++;
      return kernel.apply(ops);
    },
  };
  return { tables: new KiloRoutingTables(wrapped), applies: () => applies, reads: () => reads };
}

async function shown(tables: KiloRoutingTables): Promise<{ routes: string[]; rules: string[] }> {
  const s = await tables.read();
  return { routes: s.routes.map(describeRoute).sort(), rules: s.rules.map(describeRule).sort() };
}

const sortedRoutes = (rs: KernelRoute[]) => rs.map((x) => `${describeRoute(x)} proto ${x.protocol}`).sort();
const sortedRules = (rs: KernelRule[]) => rs.map(describeRule).sort();

export function routesContract(label: string, make: () => Promise<RoutesHarness>, skip: string | false = false): void {
  describe(`RoutingTables contract: ${label}`, { skip }, () => {
    const withKernel = (name: string, fn: (h: RoutesHarness, c: Counted) => Promise<void>): void =>
      void test(name, async () => {
        const h = await make();
        try {
          await fn(h, counted(h.kernel));
        } finally {
          h.destroy();
        }
      });

    withKernel('plan A reads back exactly; B changes only the difference; B again writes nothing', async (_h, c) => {
      const a = await c.tables.reconcile(planA.routes, planA.rules, devices);
      assert.equal(a.writes, 11, a.details.join('\n'));
      assert.equal(c.applies(), 1, 'all of plan A in one batch');
      assert.deepEqual(await shown(c.tables), { routes: routesA, rules: rulesA });

      const b = await c.tables.reconcile(planB.routes, planB.rules, devices);
      assert.deepEqual([...b.details].sort(), [
        'add route 10.42.5.0/24 via 192.168.1.5 dev priv0 onlink',
        'add rule from 10.42.1.0/24 to 192.168.1.5/32 lookup 1107 priority 1107',
        'del route 10.42.4.0/24 via 192.168.1.4 dev priv0',
        'del rule from all to 192.168.1.3/32 iif kilo0 lookup 1107 priority 1107',
        'replace route 10.42.3.0/24 via 192.168.1.5 dev priv0 onlink',
      ]);
      assert.equal(b.writes, 5);
      assert.equal(c.applies(), 2);
      assert.deepEqual(await shown(c.tables), { routes: routesB, rules: rulesB });

      const again = await c.tables.reconcile(planB.routes, planB.rules, devices);
      assert.deepEqual(again, { writes: 0, details: [] });
      assert.equal(c.applies(), 2, 'an unchanged plan sends nothing to the kernel');
    });

    // The fail-closed guard (routes/guard.ts): both families, the main table, 1107 and 1108.
    const guard: PlanGuardRoute[] = [
      { dst: '10.4.0.0/16', table: 'main' },
      { dst: '10.42.2.0/24', table: 'main' },
      { dst: '10.5.0.0/24', table: 'main' },
      { dst: 'fd43::/64', table: kiloTable },
      { dst: '192.168.2.5/32', table: hostTable },
    ];
    const guardText = [
      'route blackhole 10.4.0.0/16 metric 1',
      'route blackhole 10.42.2.0/24 metric 1',
      'route blackhole 10.5.0.0/24 metric 1',
      'route blackhole fd43::/64 dev lo table 1107 metric 1025',
      'route blackhole 192.168.2.5/32 table 1108 metric 1',
    ];
    withKernel(
      'the fail-closed guard: a blackhole behind each route through kilo, read back exactly; it stays when kilo0 goes',
      async (h, c) => {
        const on = await c.tables.reconcile(planA.routes, planA.rules, devices, { guard });
        assert.equal(on.writes, 11 + guard.length, on.details.join('\n'));
        assert.deepEqual((await shown(c.tables)).routes, [...routesA, ...guardText].sort());
        assert.deepEqual(await c.tables.reconcile(planA.routes, planA.rules, devices, { guard }), {
          writes: 0,
          details: [],
        });
        // kg apply's guess of the kernel's text (the loopback of IPv6's blackhole included) holds.
        const fresh = new KiloRoutingTables(h.kernel);
        assert.deepEqual(await fresh.reconcile(planA.routes, planA.rules, devices, { guard, once: true }), {
          writes: 0,
          details: [],
        });

        // The interface goes: its routes go with it, the guard stays.
        await h.deleteLink('kilo0');
        const throughPriv = routesA.filter((x) => x.includes(' dev priv0'));
        assert.deepEqual((await shown(c.tables)).routes, [...throughPriv, ...guardText].sort());

        // Without a guard in the plan it is removed like any route of Kilo's.
        const off = await c.tables.reconcile([], [], devices);
        assert.deepEqual(
          off.details.filter((d) => d.startsWith('del route blackhole')).sort(),
          guardText.map((x) => `del ${x}`).sort(),
        );
        assert.deepEqual(await shown(c.tables), { routes: [], rules: [] });
      },
    );

    withKernel(
      'trusting the last write: a change of routes alone reads nothing and leaves the kernel as a read would',
      async (_h, c) => {
        const m = lastWrite<RoutingWritten>();
        await c.tables.reconcile(planA.routes, planA.rules, devices, m.keep());
        const reads = c.reads();
        const routesOnly = await c.tables.reconcile(planB.routes, planA.rules, devices, m.trust());
        assert.equal(c.reads(), reads, 'no read: the last write is trusted');
        assert.deepEqual([...routesOnly.details].sort(), [
          'add route 10.42.5.0/24 via 192.168.1.5 dev priv0 onlink',
          'del route 10.42.4.0/24 via 192.168.1.4 dev priv0',
          'replace route 10.42.3.0/24 via 192.168.1.5 dev priv0 onlink',
        ]);
        assert.deepEqual((await shown(c.tables)).routes, routesB);
        // Memory and kernel agree: a full read finds nothing to do.
        assert.deepEqual(await c.tables.reconcile(planB.routes, planA.rules, devices, m.keep()), {
          writes: 0,
          details: [],
        });

        // Rules changing: which rule a delete hits depends on the kernel's order, so it reads.
        const before = c.reads();
        const b = await c.tables.reconcile(planB.routes, planB.rules, devices, m.trust());
        assert.equal(c.reads() - before, 1);
        assert.equal(b.writes, 2, b.details.join('\n'));
        assert.deepEqual(await shown(c.tables), { routes: routesB, rules: rulesB });
      },
    );

    withKernel(
      'once (kg apply): the same writes and errors as a full reconcile, whatever the kernel holds',
      async (h, c) => {
        const once = { once: true };
        const a = await c.tables.reconcile(planA.routes, planA.rules, devices, once);
        assert.equal(a.writes, 11, a.details.join('\n'));
        assert.deepEqual(await c.tables.reconcile(planA.routes, planA.rules, devices, once), {
          writes: 0,
          details: [],
        });
        assert.equal(c.applies(), 1, 'an unchanged plan sends nothing to the kernel');
        // Someone else's change under one of our keys and a stray route of ours are repaired, and a
        // rule the plan no longer has is removed.
        const moved = (await c.tables.read()).routes.find((x) => x.dst === '10.42.4.0/24')!;
        await h.deleteRoute(moved);
        await h.addRoute({ ...moved, gw: '192.168.1.9' });
        await h.addRoute(kernelRoute('10.42.9.0/24', 'kilo0'));
        // A copy of the plan, as a new kg apply has: nothing remembered of the desired state, so the
        // routes the machine printed as planned go into it unparsed.
        const repaired = await c.tables.reconcile([...planA.routes], planA.rules, devices, once);
        assert.deepEqual([...repaired.details].sort(), [
          'del route 10.42.9.0/24 dev kilo0',
          'replace route 10.42.4.0/24 via 192.168.1.4 dev priv0',
        ]);
        await h.deleteRoute(moved);
        assert.deepEqual((await c.tables.reconcile(planA.routes, planA.rules, devices, once)).details, [
          `add ${describeRoute(moved)}`,
        ]);
        assert.deepEqual((await c.tables.reconcile(planA.routes, planA.rules.slice(1), devices, once)).details, [
          'del rule from 10.42.1.0/24 to 192.168.1.3/32 lookup 1107 priority 1107',
        ]);
        // A plan text the kernel prints otherwise (IPv6 not in its shortest form) is the same route.
        const longhand = planA.routes.map((x) => (x.dst === 'fd43::/64' ? { ...x, dst: 'fd43:0::/64' } : x));
        assert.deepEqual(await c.tables.reconcile(longhand, planA.rules.slice(1), devices, once), {
          writes: 0,
          details: [],
        });
        // Two routes at one key, the machine holding the second: the first is put back and the
        // second reported, as without `once`.
        const twice = [...planA.routes, r('10.42.4.0/24', '192.168.1.9', 'private')];
        const toSecond = async () => {
          await h.deleteRoute((await c.tables.read()).routes.find((x) => x.dst === '10.42.4.0/24')!);
          await h.addRoute({ ...moved, gw: '192.168.1.9' });
        };
        await toSecond();
        const onceConflict = await c.tables
          .reconcile(twice, planA.rules.slice(1), devices, once)
          .catch((e: unknown) => e);
        await toSecond();
        const conflict = await c.tables.reconcile(twice, planA.rules.slice(1), devices).catch((e: unknown) => e);
        assert.ok(conflict instanceof PartialApplyError);
        assert.deepEqual(conflict.ops.details, ['replace route 10.42.4.0/24 via 192.168.1.4 dev priv0']);
        assert.deepEqual(onceConflict, conflict);
        // A route that cannot be installed is reported as without `once`; the others are still compared.
        const noPrivate = { ...devices, private: null };
        const without = await c.tables.reconcile(planA.routes, planA.rules, noPrivate).catch((e: unknown) => e);
        await c.tables.reconcile(planA.routes, planA.rules.slice(1), devices);
        const withOnce = await c.tables.reconcile(planA.routes, planA.rules, noPrivate, once).catch((e: unknown) => e);
        assert.ok(without instanceof PartialApplyError);
        assert.deepEqual(withOnce, without);
      },
    );

    withKernel(
      'trusting the last write misses a route someone deleted; the next full read puts it back',
      async (h, c) => {
        const m = lastWrite<RoutingWritten>();
        await c.tables.reconcile(planA.routes, planA.rules, devices, m.keep());
        const gone = (await c.tables.read()).routes.find((x) => x.dst === '10.42.4.0/24')!;
        await h.deleteRoute(gone);
        assert.deepEqual(await c.tables.reconcile(planA.routes, planA.rules, devices, m.trust()), {
          writes: 0,
          details: [],
        });
        const full = await c.tables.reconcile(planA.routes, planA.rules, devices);
        assert.deepEqual(full.details, [`add ${describeRoute(gone)}`]);
        assert.deepEqual(await shown(c.tables), { routes: routesA, rules: rulesA });
      },
    );

    withKernel('foreign routes and rules survive apply, re-apply and cleanup', async (h, c) => {
      for (const x of foreignRoutes) await h.addRoute(x);
      for (const x of foreignRules) await h.addRule(x);
      const routesBefore = sortedRoutes(await h.allRoutes());
      const rulesBefore = sortedRules(await h.allRules());
      const notKilo = (s: string[]) => s.filter((x) => !x.endsWith(` proto ${P}`) && !x.includes('priority 1107'));

      await c.tables.reconcile(planA.routes, planA.rules, devices);
      await c.tables.reconcile(planB.routes, planB.rules, devices);
      assert.deepEqual(notKilo(sortedRoutes(await h.allRoutes())), routesBefore);
      assert.deepEqual(notKilo(sortedRules(await h.allRules())), rulesBefore);
      assert.deepEqual(
        await shown(c.tables),
        { routes: routesB, rules: rulesB },
        'foreign state is not read as Kilo’s',
      );

      const cleaned = await c.tables.cleanup();
      assert.equal(cleaned.writes, routesB.length + rulesB.length);
      assert.deepEqual(sortedRoutes(await h.allRoutes()), routesBefore);
      assert.deepEqual(sortedRules(await h.allRules()), rulesBefore);
      assert.equal((await c.tables.cleanup()).writes, 0);
    });

    withKernel('a Kilo route deleted by someone comes back at the next reconcile', async (h, c) => {
      await c.tables.reconcile(planA.routes, planA.rules, devices);
      // Resyncs that find the machine as it was (the Linux reader's same texts: the same read) write nothing ...
      for (let i = 0; i < 2; i++)
        assert.equal((await c.tables.reconcile(planA.routes, planA.rules, devices)).writes, 0);
      // ... and one after a change repairs it.
      await h.deleteRoute(kernelRoute('10.42.3.0/24', 'priv0'));
      await h.deleteRoute(kernelRoute('fd43::/64', 'kilo0', { table: kiloTable }));
      const back = await c.tables.reconcile(planA.routes, planA.rules, devices);
      assert.deepEqual([...back.details].sort(), [
        'add route 10.42.3.0/24 via 192.168.1.3 dev priv0 onlink',
        'add route fd43::/64 dev kilo0 table 1107',
      ]);
      assert.deepEqual(await shown(c.tables), { routes: routesA, rules: rulesA });
    });

    withKernel(
      'routes and rules of an earlier run are removed; foreign ones with the same addresses stay',
      async (h, c) => {
        // An earlier run (other granularity, crash) left these with Kilo's marks.
        await h.addRoute(kernelRoute('10.42.77.0/24', 'priv0'));
        await h.addRoute(
          kernelRoute('192.168.1.77/32', 'priv0', { gw: '192.168.1.77', onlink: true, table: kiloTable }),
        );
        await h.addRoute(kernelRoute('fd77::/64', 'kilo0'));
        await h.addRoute(kernelRoute('10.42.2.0/24', 'priv0', { gw: '192.168.1.2' })); // same key as A's, other gateway
        await h.addRule(kernelRule('10.42.77.0/24', '192.168.1.77/32', 1107, kiloTable));
        await h.addRule(kernelRule('fd77::/64', null, 1107, kiloTable));
        // Not Kilo's, though the addresses look like it.
        await h.addRoute(kernelRoute('10.42.78.0/24', 'priv0', { protocol: 4 }));
        await h.addRule(kernelRule('10.42.77.0/24', '192.168.1.77/32', 1200, kiloTable));

        const ops = await c.tables.reconcile(planA.routes, planA.rules, devices);
        assert.equal(c.applies(), 1);
        assert.ok(
          ops.details.includes('replace route 10.42.2.0/24 via 10.4.0.2 dev kilo0 src 192.168.1.1 onlink'),
          ops.details.join('\n'),
        );
        assert.deepEqual(await shown(c.tables), { routes: routesA, rules: rulesA });
        const all = sortedRoutes(await h.allRoutes());
        assert.ok(all.includes('route 10.42.78.0/24 dev priv0 proto 4'), all.join('\n'));
        assert.ok(
          sortedRules(await h.allRules()).includes(
            'rule from 10.42.77.0/24 to 192.168.1.77/32 lookup 1107 priority 1200',
          ),
        );
      },
    );

    withKernel('one bad route is named in the error and everything else is applied', async (_h, c) => {
      const bad = [
        ...planA.routes,
        r('10.42.9.0/24', '172.31.0.9', 'private'), // gateway not on any connected network, no onlink
        r('10.42.10.0/24', '192.168.1.10', 'tunnel', { onlink: true }), // no tunnel interface on this node
      ];
      const err = await c.tables.reconcile(bad, planA.rules, devices).then(
        () => assert.fail('expected a PartialApplyError'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof PartialApplyError, String(err));
      assert.equal(err.ops.writes, 11, 'the good routes and rules were applied');
      assert.deepEqual(
        err.failures.map((f) => f.object),
        ['route 10.42.10.0/24 via 192.168.1.10 dev tunnel', 'route 10.42.9.0/24 via 172.31.0.9 dev priv0'],
      );
      assert.match(err.failures[0]!.message, /tunnel has no interface/);
      assert.match(err.failures[1]!.message, /invalid gateway/i);
      assert.match(err.message, /route 10\.42\.9\.0\/24 via 172\.31\.0\.9 dev priv0: .*gateway/i);
      assert.deepEqual(await shown(c.tables), { routes: routesA, rules: rulesA });

      // A vanished device: the route is named, the rest stays converged.
      const gone = await c.tables.reconcile(planA.routes, planA.rules, { ...devices, private: 'gone0' }).then(
        () => assert.fail('expected a PartialApplyError'),
        (e: unknown) => e as PartialApplyError,
      );
      assert.ok(
        gone.failures.some(
          (f) => f.object === 'route 10.42.4.0/24 via 192.168.1.4 dev gone0' && /Cannot find device/.test(f.message),
        ),
      );
      assert.ok(
        gone.failures.every((f) => f.object.includes('gone0')),
        gone.message,
      );
      assert.deepEqual((await shown(c.tables)).rules, rulesA);
    });

    withKernel(
      'dual stack: IPv4 routes via IPv6 gateways install and re-apply with no writes; IPv6 via IPv4 is named, the rest applied',
      async (_h, c) => {
        const mixed = [
          ...planA.routes,
          r('10.42.20.0/24', 'fd00::2', 'private'), // on priv0's IPv6 network
          r('10.42.21.0/24', 'fd00:99::2', 'kilo', { onlink: true, src: '192.168.1.1' }),
          r('fd42:21::/64', '10.4.0.2', 'kilo', { onlink: true }), // no IPv4 next hop for IPv6 in Linux
        ];
        const err = (await c.tables
          .reconcile(mixed, planA.rules, devices)
          .catch((e: unknown) => e)) as PartialApplyError;
        assert.ok(err instanceof PartialApplyError, String(err));
        assert.deepEqual(
          err.failures.map((f) => `${f.object}: ${f.message}`),
          [
            'route fd42:21::/64 via 10.4.0.2 dev kilo: IPv6 destination fd42:21::/64 cannot have IPv4 gateway 10.4.0.2: Linux has no IPv4 next hop for IPv6 routes',
          ],
        );
        assert.equal(err.ops.writes, 11 + 2, err.ops.details.join('\n'));
        const both = [
          'route 10.42.20.0/24 via inet6 fd00::2 dev priv0',
          'route 10.42.21.0/24 via inet6 fd00:99::2 dev kilo0 src 192.168.1.1 onlink',
        ];
        assert.deepEqual(await shown(c.tables), { routes: [...routesA, ...both].sort(), rules: rulesA });

        const again = (await c.tables
          .reconcile(mixed, planA.rules, devices)
          .catch((e: unknown) => e)) as PartialApplyError;
        assert.equal(again.ops.writes, 0, 'what is installed reads back as the plan wants it');
        const good = mixed.filter((x) => x.dst !== 'fd42:21::/64');
        assert.deepEqual(await c.tables.reconcile(good, planA.rules, devices), { writes: 0, details: [] });

        const back = await c.tables.reconcile(planA.routes, planA.rules, devices);
        assert.deepEqual(
          [...back.details].sort(),
          both.map((x) => `del ${x}`),
        );
      },
    );

    withKernel('a route the plan wants but someone else holds is reported, never taken over', async (h, c) => {
      await h.addRoute(kernelRoute('10.42.4.0/24', 'priv0', { protocol: 4 }));
      await h.addRoute(kernelRoute('fd43::/64', 'priv0', { protocol: 4, table: kiloTable }));
      const err = (await c.tables
        .reconcile(planA.routes, planA.rules, devices)
        .catch((e: unknown) => e)) as PartialApplyError;
      assert.ok(err instanceof PartialApplyError, String(err));
      assert.deepEqual(
        err.failures.map((f) => `${f.object}: ${f.message}`),
        [
          'route 10.42.4.0/24 via 192.168.1.4 dev priv0: File exists',
          'route fd43::/64 dev kilo0 table 1107: File exists',
        ],
      );
      const all = sortedRoutes(await h.allRoutes());
      assert.ok(all.includes('route 10.42.4.0/24 dev priv0 proto 4'), all.join('\n'));
      assert.ok(all.includes('route fd43::/64 dev priv0 table 1107 proto 4'), all.join('\n'));
      assert.equal((await shown(c.tables)).routes.length, routesA.length - 2);
    });

    withKernel('rules whose selectors overlap are removed and added without hitting each other', async (_h, c) => {
      // The kernel matches rule deletes (and duplicate checks) only on the selectors given.
      const fromAndTo = rule('10.42.1.0/24', '192.168.1.3/32');
      const toOnly = rule(null, '192.168.1.3/32');
      const iifTo = rule(null, '192.168.1.3/32', 'kilo');
      const text = new Map([
        [fromAndTo, 'rule from 10.42.1.0/24 to 192.168.1.3/32 lookup 1107 priority 1107'],
        [toOnly, 'rule from all to 192.168.1.3/32 lookup 1107 priority 1107'],
        [iifTo, 'rule from all to 192.168.1.3/32 iif kilo0 lookup 1107 priority 1107'],
      ]);
      const steps = [
        [fromAndTo],
        [fromAndTo, toOnly],
        [fromAndTo],
        [toOnly],
        [fromAndTo, toOnly],
        [toOnly],
        [iifTo],
        [iifTo, toOnly],
        [iifTo],
        [toOnly, iifTo, fromAndTo],
        [],
      ];
      for (const rules of steps) {
        const want = rules.map((x) => text.get(x)!);
        await c.tables.reconcile([], rules, devices);
        assert.deepEqual((await shown(c.tables)).rules, [...want].sort(), `after ${want.join(', ')}`);
        assert.equal((await c.tables.reconcile([], rules, devices)).writes, 0);
      }
    });

    // --route-host-traffic: WireGuard's own packets (marked) skip table 1108, everything else looks there.
    const markRule: PlanRule = {
      src: null,
      dst: null,
      iif: null,
      table: hostTable,
      fwmark: wireGuardMark,
      invert: true,
    };
    const hostRoutes = [
      r('192.168.2.5/32', '10.4.0.2', 'kilo', { onlink: true, src: '192.168.1.1', table: hostTable }),
      r('fd00:2::5/128', null, 'kilo', { table: hostTable }),
    ];
    const markRules = [
      'rule not from all fwmark 0x453 lookup 1108 priority 1107',
      'rule -6 not from all fwmark 0x453 lookup 1108 priority 1107',
    ];
    const hostRouteText = [
      'route 192.168.2.5/32 via 10.4.0.2 dev kilo0 src 192.168.1.1 onlink table 1108',
      'route fd00:2::5/128 dev kilo0 table 1108',
    ];

    withKernel('the fwmark rule (both families) and table-1108 routes read back, stay, and go', async (_h, c) => {
      const routes = [...planA.routes, ...hostRoutes];
      const rules = [...planA.rules, markRule];
      const on = await c.tables.reconcile(routes, rules, devices);
      assert.equal(on.writes, 11 + 4, on.details.join('\n'));
      assert.deepEqual(await shown(c.tables), {
        routes: [...routesA, ...hostRouteText].sort(),
        rules: [...rulesA, ...markRules].sort(),
      });
      assert.deepEqual(await c.tables.reconcile(routes, rules, devices), { writes: 0, details: [] });

      // The flag turned off: exactly the rule and the table-1108 routes go.
      const off = await c.tables.reconcile(planA.routes, planA.rules, devices);
      assert.deepEqual(
        [...off.details].sort(),
        [...hostRouteText.map((x) => `del ${x}`), ...markRules.map((x) => `del ${x}`)].sort(),
      );
      assert.deepEqual(await shown(c.tables), { routes: routesA, rules: rulesA });

      await c.tables.reconcile(routes, rules, devices);
      const cleaned = await c.tables.cleanup();
      assert.equal(cleaned.writes, routesA.length + rulesA.length + 4);
      assert.deepEqual(await shown(c.tables), { routes: [], rules: [] });
    });

    withKernel('mark rules left at Kilo’s priority (other mask, without not) give way to the plan’s', async (h, c) => {
      // The kernel refuses `not fwmark X` next to `fwmark X` (it ignores `not` when comparing) and
      // tells `0x453/0xffff` from `0x453`: both must be removed first, the foreign one must stay.
      await h.addRule(kernelRule(null, null, 1107, hostTable, { fwmark: '0x453' }));
      await h.addRule(kernelRule(null, null, 1107, hostTable, { fwmark: '0x453/0xffff', invert: true }));
      await h.addRule(kernelRule(null, null, 1200, hostTable, { fwmark: '0x453', invert: true }));
      const ops = await c.tables.reconcile([], [markRule], devices);
      assert.deepEqual([...ops.details].sort(), [
        'add rule -6 not from all fwmark 0x453 lookup 1108 priority 1107',
        'add rule not from all fwmark 0x453 lookup 1108 priority 1107',
        'del rule from all fwmark 0x453 lookup 1108 priority 1107',
        'del rule not from all fwmark 0x453/0xffff lookup 1108 priority 1107',
      ]);
      assert.deepEqual((await shown(c.tables)).rules, [...markRules].sort());
      assert.ok(
        sortedRules(await h.allRules()).includes('rule not from all fwmark 0x453 lookup 1108 priority 1200'),
        'a rule at another priority is not Kilo’s',
      );
      assert.equal((await c.tables.reconcile([], [markRule], devices)).writes, 0);
    });

    withKernel('cleanup removes every Kilo route in every table and every rule at Kilo’s priority', async (h, c) => {
      await c.tables.reconcile(planA.routes, planA.rules, devices);
      await h.addRoute(kernelRoute('10.42.88.0/24', 'priv0', { table: 200 }));
      const ops = await c.tables.cleanup();
      assert.equal(ops.writes, routesA.length + 1 + rulesA.length);
      assert.deepEqual(await shown(c.tables), { routes: [], rules: [] });
    });
  });
}
