/**
 * The agent's dataplane (wireguard-go, iproute2, iptables in a network namespace) when an address its
 * routes depend on is taken away by hand. Its IPv4 routes with a gateway sit on next-hop objects
 * (src/dataplane/routes/nexthops.ts), which Linux keeps when an interface loses its last IPv4
 * address (a plain route goes) and takes with their source address (as a plain route): no route of
 * Kilo's may be left with a source no interface holds, and each pass after the routing monitor's
 * report (the agent forgets its last write) puts the plan's state back, through the same next hops.
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { test } from 'node:test';
import { withoutNexthopIds } from '../../packages/lab/src/observe.js';
import { linuxDataplane } from '../../src/agent/linux-dataplane.js';
import { DataplaneMemory } from '../../src/dataplane/cache.js';
import { reconcile } from '../../src/dataplane/reconcile.js';
import { skipNoNetns, type TestNamespace } from '../helpers/netns.js';
import { inputOf, planA } from './equivalence-steps.js';
import { eth0Namespace } from './namespaces.js';

// netnsExec binds a per-namespace directory over this path; wireguard-go would create it anyway.
if (!skipNoNetns) mkdirSync('/var/run/wireguard', { recursive: true });

interface Shown {
  /** Printed for other types than unicast: the fail-closed guard's blackholes. */
  type?: string;
  dst: string;
  nhid?: number;
  gateway?: string;
  prefsrc?: string;
  protocol?: string;
}

test(
  "an address taken away: no route of Kilo's keeps a source no interface holds; the next pass repairs the routes",
  { skip: skipNoNetns },
  async () => {
    const ns: TestNamespace = eth0Namespace('ktag');
    const dp = linuxDataplane(ns.exec, { interfaceName: 'kilo0', createInterface: true, implementation: 'userspace' });
    const sh = async (...argv: string[]) => (await ns.exec.run(argv)).stdout;
    // Kilo's unicast routes (the guard's blackholes stand behind them whatever happens).
    const routes = async () =>
      (JSON.parse((await sh('ip', '-j', '-4', 'route', 'show', 'proto', '107')) || '[]') as Shown[]).filter(
        (r) => r.type === undefined,
      );
    // The routes with next hops named by gateway and device, and the next hops with their ids: a
    // repair must reuse them, not make new ones.
    const state = async () => {
      const hops = await sh('ip', 'nexthop', 'show');
      const { route } = withoutNexthopIds(hops);
      return {
        routes: (await sh('ip', '-4', 'route', 'show', 'table', 'all', 'proto', '107'))
          .split('\n')
          .filter(Boolean)
          .map(route)
          .sort(),
        nexthops: hops.split('\n').filter(Boolean).sort(),
        kilo0: (await sh('ip', '-4', '-o', 'addr', 'show', 'dev', 'kilo0')).replace(/^\d+:\s*/, '').split('\\')[0]!,
      };
    };
    // As the agent after its routing monitor reports an address change: forget the last write, read.
    const memory = new DataplaneMemory();
    const pass = async () => {
      memory.forget();
      return reconcile(dp, inputOf(planA), { memory });
    };
    try {
      const first = await pass();
      assert.deepEqual(first.errors, []);
      const written = await routes();
      // Every route with a gateway on a next hop of Kilo's; the one without (to the Peer) plain.
      assert.deepEqual(
        written.map((r) => `${r.dst} ${r.gateway ? (r.nhid === undefined ? 'plain' : 'nhid') : 'no gateway'}`).sort(),
        [
          '10.2.2.0/24 nhid',
          '10.2.3.0/24 nhid',
          '10.2.8.0/24 nhid',
          '10.2.9.0/24 nhid',
          '10.5.0.1 no gateway',
          '10.8.0.1 nhid',
          '10.8.0.2 nhid',
        ],
      );
      const applied = await state();
      assert.equal((await pass()).writes, 0, 'the plan is on the machine');

      // kilo0's only IPv4 address: the routes on next hops stay, the plain one goes; the pass gives
      // the address back and writes that one route.
      await sh(
        'ip',
        'addr',
        'del',
        applied.kilo0.split(' ').find((w) => w.includes('/'))!,
        'dev',
        'kilo0',
      );
      assert.deepEqual((await routes()).map((r) => r.dst).sort(), [
        '10.2.2.0/24',
        '10.2.3.0/24',
        '10.2.8.0/24',
        '10.2.9.0/24',
        '10.8.0.1',
        '10.8.0.2',
      ]);
      const relinked = await pass();
      assert.deepEqual(relinked.errors, []);
      assert.deepEqual(relinked.routes.details, ['add route 10.5.0.1/32 dev kilo0 src 10.1.0.1']);
      assert.deepEqual(await state(), applied);

      // The node's internal IP, the source of the routes through kilo0 (and eth0's only IPv4 address):
      // the routes with it as source go, next hops or not; those over eth0 stay on their next hops.
      await sh('ip', 'addr', 'del', '10.1.0.1/24', 'dev', 'eth0');
      const left = await routes();
      assert.deepEqual(left.map((r) => `${r.dst} ${r.prefsrc ?? '-'}`).sort(), ['10.2.2.0/24 -', '10.2.3.0/24 -']);
      // The plan's source is no interface's any more: the pass says which routes it cannot write, and why.
      const refused = await pass();
      assert.match(
        String(refused.errors[0]?.message),
        /route 10\.2\.8\.0\/24 via 10\.4\.0\.2 dev kilo0 src 10\.1\.0\.1 onlink/,
      );
      assert.match(String(refused.errors[0]?.message), /Invalid prefsrc address/);
      assert.equal(refused.errors.length, 1, refused.errors.join('\n'));
      assert.ok(
        (await routes()).every((r) => r.prefsrc === undefined),
        'no route of Kilo’s is left with a source no interface holds',
      );

      // The address back: the pass after rewrites every route, through the next hops that stayed.
      await sh('ip', 'addr', 'add', '10.1.0.1/24', 'dev', 'eth0');
      const repaired = await pass();
      assert.deepEqual(repaired.errors, []);
      assert.deepEqual(await state(), applied);
    } finally {
      try {
        await dp.device.destroy();
      } finally {
        ns.destroy();
      }
    }
  },
);
