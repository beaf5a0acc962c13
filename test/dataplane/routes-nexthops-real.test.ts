/**
 * Gateway routes through next-hop objects (src/dataplane/routes/nexthops.ts), in a network
 * namespace: the kernel holds `nhid` routes and Kilo's next hops, the reads and the diff see the
 * plan's `via` routes; a gateway change, a removal, a crash's leftovers and a clean-up leave no next
 * hop of Kilo's unused, and never touch another program's.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ExecError, type Exec } from '../../src/dataplane/exec.js';
import { IprouteRoutes } from '../../src/dataplane/routes/linux.js';
import { kiloNexthopBase } from '../../src/dataplane/routes/nexthops.js';
import { KiloRoutingTables } from '../../src/dataplane/routes/reconciler.js';
import type { DeviceNames } from '../../src/dataplane/types.js';
import type { PlanRoute } from '../../src/mesh/types.js';
import { skipNoNetns, type TestNamespace } from '../helpers/netns.js';
import { routesNamespace } from './namespaces.js';
import { ipExec } from './routes-exec.js';

const devices: DeviceNames = { kilo: 'kilo0', private: 'priv0', tunnel: null };
const via = (dst: string, gw: string, dev: PlanRoute['dev'] = 'kilo', src: string | null = null): PlanRoute => ({
  dst,
  gw,
  dev,
  src,
  table: 'main',
  onlink: true,
});

// Two routes through each of two nodes' WireGuard IPs, one in the clear, IPv6 (plain), and IPv4 through IPv6.
const plan: PlanRoute[] = [
  via('10.42.2.0/24', '10.4.0.2', 'kilo', '192.168.1.1'),
  via('192.168.2.5/32', '10.4.0.2', 'kilo', '192.168.1.1'),
  via('10.42.3.0/24', '10.4.0.3'),
  via('192.168.3.5/32', '10.4.0.3'),
  via('10.42.4.0/24', '192.168.1.4', 'private'),
  via('fd42:2::/64', 'fd00:4::2'),
  via('10.42.6.0/24', 'fd00:4::6'),
  { dst: '10.5.0.0/24', gw: null, dev: 'kilo', src: null, table: 'main', onlink: false },
];

interface Hop {
  id: number;
  gateway?: string;
  dev?: string;
  protocol?: string;
  flags?: string[];
}
interface Shown {
  dst: string;
  nhid?: number;
  gateway?: string;
  via?: { host: string };
}

async function json<T>(exec: Exec, argv: string[]): Promise<T[]> {
  return JSON.parse((await exec.run(['ip', '-N', '-j', ...argv])).stdout || '[]') as T[];
}
const hops = (exec: Exec) => json<Hop>(exec, ['nexthop', 'show']);
const ours = async (exec: Exec) => (await hops(exec)).filter((h) => h.protocol === '107');
const routes = async (exec: Exec) => [
  ...(await json<Shown>(exec, ['-4', 'route', 'show', 'proto', '107'])),
  ...(await json<Shown>(exec, ['-6', 'route', 'show', 'proto', '107'])),
];
/** Each route of Kilo's with a gateway as "dst gateway #id", the id's gateway checked against the next hop's. */
async function throughHops(exec: Exec): Promise<string[]> {
  const byId = new Map((await hops(exec)).map((h) => [h.id, h]));
  return (await routes(exec))
    .filter((r) => r.gateway ?? r.via)
    .map((r) => {
      const gw = r.gateway ?? r.via!.host;
      if (r.nhid === undefined) return `${r.dst} ${gw} plain`;
      const hop = byId.get(r.nhid);
      assert.equal(hop?.gateway, gw, `${r.dst}: nhid ${r.nhid} is ${JSON.stringify(hop)}`);
      assert.equal(hop.protocol, '107', `${r.dst}: through a next hop of Kilo's`);
      return `${r.dst} ${gw} hop`;
    })
    .sort();
}

const withNamespace = (name: string, fn: (ns: TestNamespace, exec: Exec) => Promise<void>): void =>
  void test(name, async () => {
    const ns = routesNamespace('ktnh');
    try {
      ns.sh('ip addr add fd00:4::1/64 dev kilo0 nodad');
      await fn(ns, ipExec(ns));
    } finally {
      ns.destroy();
    }
  });

const tablesOf = (exec: Exec, nexthops = true) =>
  new KiloRoutingTables(new IprouteRoutes(exec, undefined, undefined, nexthops));

describe('routes through next-hop objects', { skip: skipNoNetns }, () => {
  withNamespace(
    'one next hop per gateway, read back as the plan; a gateway change, a removal, a clean-up',
    async (ns, exec) => {
      // Another program's next hops, one at the first id Kilo would take: never changed, never taken.
      ns.sh(`ip nexthop add id ${kiloNexthopBase} via 10.4.0.2 dev kilo0 onlink`);
      ns.sh('ip nexthop add id 7 via 10.4.0.3 dev kilo0 onlink proto 4');
      const foreign = (await hops(exec)).filter((h) => h.protocol !== '107');
      assert.equal(foreign.length, 2);

      const tables = tablesOf(exec);
      const first = await tables.reconcile(plan, [], devices);
      assert.equal(first.writes, plan.length, first.details.join('\n'));
      assert.deepEqual(await throughHops(exec), [
        '10.42.2.0/24 10.4.0.2 hop',
        '10.42.3.0/24 10.4.0.3 hop',
        '10.42.4.0/24 192.168.1.4 hop',
        '10.42.6.0/24 fd00:4::6 hop',
        '192.168.2.5 10.4.0.2 hop',
        '192.168.3.5 10.4.0.3 hop',
        'fd42:2::/64 fd00:4::2 plain',
      ]);
      const four = await ours(exec);
      assert.equal(four.length, 4, 'one next hop per gateway of an IPv4 route');
      assert.ok(four.every((h) => h.id !== kiloNexthopBase && h.id !== 7));
      // Read back as the plan: a fresh reader (a restart) finds nothing to write.
      assert.equal((await tablesOf(exec).reconcile(plan, [], devices)).writes, 0);
      assert.equal((await tables.reconcile(plan, [], devices)).writes, 0);

      // 10.4.0.3's node now behind 10.4.0.9: its routes move, its old next hop goes.
      const moved = plan.map((r) => (r.gw === '10.4.0.3' ? { ...r, gw: '10.4.0.9' } : r));
      const change = await tables.reconcile(moved, [], devices);
      assert.deepEqual([...change.details].sort(), [
        'replace route 10.42.3.0/24 via 10.4.0.9 dev kilo0 onlink',
        'replace route 192.168.3.5/32 via 10.4.0.9 dev kilo0 onlink',
      ]);
      assert.deepEqual((await ours(exec)).map((h) => h.gateway).sort(), [
        '10.4.0.2',
        '10.4.0.9',
        '192.168.1.4',
        'fd00:4::6',
      ]);
      assert.ok((await throughHops(exec)).includes('10.42.3.0/24 10.4.0.9 hop'));

      // A node gone: its routes and its next hop.
      const removed = moved.filter((r) => r.gw !== '10.4.0.2');
      await tables.reconcile(removed, [], devices);
      assert.deepEqual((await ours(exec)).map((h) => h.gateway).sort(), ['10.4.0.9', '192.168.1.4', 'fd00:4::6']);

      await tables.cleanup();
      assert.deepEqual(await routes(exec), []);
      assert.deepEqual(await ours(exec), []);
      assert.deepEqual(
        (await hops(exec)).filter((h) => h.protocol !== '107'),
        foreign,
        "another program's next hops untouched",
      );
    },
  );

  withNamespace(
    "a crash's leftovers: used next hops kept, unused ones removed, plain routes of Kilo's kept",
    async (ns, exec) => {
      await tablesOf(exec).reconcile(plan, [], devices);
      // The previous agent died between writing a next hop and its routes; an older one wrote a plain route.
      ns.sh(`ip nexthop add id ${kiloNexthopBase + 1000} via 10.4.0.77 dev kilo0 onlink proto 107`);
      ns.sh('ip route add 10.42.8.0/24 via 10.4.0.8 dev kilo0 onlink proto 107');
      const before = (await ours(exec)).filter((h) => h.gateway !== '10.4.0.77');
      const withPlain = [...plan, via('10.42.8.0/24', '10.4.0.8')];
      const tables = tablesOf(exec);
      assert.equal(
        (await tables.reconcile(withPlain, [], devices)).writes,
        0,
        'nothing to write: the routes are the plan',
      );
      assert.deepEqual(await ours(exec), before, 'the unused next hop removed, the used ones kept');
      assert.ok((await throughHops(exec)).includes('10.42.8.0/24 10.4.0.8 plain'), 'a plain route of Kilo’s is kept');
      await tables.cleanup();
      assert.deepEqual(await routes(exec), []);
      assert.deepEqual(await ours(exec), []);
    },
  );

  withNamespace(
    "kg apply's one read: a crash's unused next hop removed though every route is the plan",
    async (ns, exec) => {
      await tablesOf(exec).reconcile(plan, [], devices);
      const before = await ours(exec);
      ns.sh(`ip nexthop add id ${kiloNexthopBase + 1000} via 10.4.0.77 dev kilo0 onlink proto 107`);
      // A fresh reader planning once (kg apply): the routes printed as the plan writes them.
      const result = await tablesOf(exec).reconcile(plan, [], devices, { once: true });
      assert.equal(result.writes, 0, result.details.join('\n'));
      assert.deepEqual(await ours(exec), before, 'the unused next hop removed, the used ones kept');
    },
  );

  withNamespace('routes printed by nhid alone (nexthop_compat_mode 0) read back as the plan', async (ns, exec) => {
    ns.sh('sysctl -qw net.ipv4.nexthop_compat_mode=0');
    const tables = tablesOf(exec);
    await tables.reconcile(plan, [], devices);
    const shown = await routes(exec);
    assert.ok(shown.some((r) => r.nhid !== undefined && r.gateway === undefined && r.via === undefined));
    assert.equal((await tables.reconcile(plan, [], devices)).writes, 0);
    assert.equal((await tablesOf(exec).reconcile(plan, [], devices)).writes, 0, 'a restart reads them back too');
    const moved = plan.map((r) => (r.gw === '10.4.0.3' ? { ...r, gw: '10.4.0.9' } : r));
    assert.equal((await tables.reconcile(moved, [], devices)).writes, 2);
    assert.equal((await tablesOf(exec).reconcile(moved, [], devices)).writes, 0);
  });

  withNamespace('without next-hop objects: plain routes, the same reads', async (ns, exec) => {
    // A kernel or iproute2 without `ip nexthop`: detected on the first read, once.
    let asked = 0;
    const old: Exec = {
      ...exec,
      run: (argv, opts) => {
        if (argv.includes('nexthop')) {
          asked++;
          return Promise.reject(new ExecError(argv, 255, '', 'Object "nexthop" is unknown, try "ip help".'));
        }
        return exec.run(argv, opts);
      },
    };
    const tables = tablesOf(old);
    await tables.reconcile(plan, [], devices);
    assert.equal((await tables.reconcile(plan, [], devices)).writes, 0);
    assert.equal(asked, 1, 'asked once');
    assert.ok((await throughHops(exec)).every((r) => r.endsWith(' plain')));
    assert.deepEqual(await ours(exec), []);

    // A device the kernel gives no next hop (no carrier): its routes plain, as before next hops.
    ns.sh('ip link set kilo1 down');
    const fresh = tablesOf(exec);
    await fresh.cleanup();
    await fresh.reconcile(plan, [], devices);
    const shown = await throughHops(exec);
    assert.ok(shown.includes('10.42.2.0/24 10.4.0.2 plain'), shown.join('\n'));
    assert.ok(shown.includes('10.42.4.0/24 192.168.1.4 hop'), shown.join('\n'));
    assert.equal((await fresh.reconcile(plan, [], devices)).writes, 0);
  });
});
