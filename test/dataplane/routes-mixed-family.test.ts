/**
 * Dual stack: a gateway of the other IP family. Linux (5.2+) takes an IPv4 route via an IPv6 next
 * hop (`via inet6`, RTA_VIA), but has no IPv4 next hop for an IPv6 route ("IPv6 does not support
 * RTA_VIA attribute", also through nexthop objects), so that one is a plan problem.
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { before, describe, test } from 'node:test';
import type { BatchResult } from '../../src/dataplane/routes/batch.js';
import type { RouteOp } from '../../src/dataplane/routes/diff.js';
import { PartialApplyError } from '../../src/dataplane/routes/errors.js';
import { FakeKernel, FakeRoutes } from '../../src/dataplane/routes/fake.js';
import { parseRoutes, renderOp } from '../../src/dataplane/routes/iproute.js';
import { IprouteRoutes, linuxRoutingTables } from '../../src/dataplane/routes/linux.js';
import type { RouteKernel } from '../../src/dataplane/routes/reconciler.js';
import { describeRoute, desiredState, type KernelRoute } from '../../src/dataplane/routes/state.js';
import type { DeviceNames } from '../../src/dataplane/types.js';
import { createWireGuardDevice } from '../../src/dataplane/wireguard/device.js';
import type { PlanRoute } from '../../src/mesh/types.js';
import { createNamespace, skipNoNetns } from '../helpers/netns.js';
import { ipExec } from './routes-exec.js';

const devices: DeviceNames = { kilo: 'kilo0', private: 'priv0', tunnel: null };
const route = (dst: string, gw: string, extra: Partial<PlanRoute> = {}): PlanRoute => ({
  dst,
  gw,
  dev: 'kilo',
  src: null,
  table: 'main',
  onlink: true,
  ...extra,
});

test('an IPv4 route via an IPv6 gateway is wanted as such; an IPv6 route via an IPv4 gateway is a problem', () => {
  const d = desiredState(
    [
      route('10.42.2.0/24', 'FD00:0::2', { src: '192.168.1.1' }),
      route('fd42:2::/64', '10.4.0.2'),
      route('10.42.3.0/24', '10.4.0.3'),
      route('fd42:3::/64', 'fd00::3'),
    ],
    [],
    devices,
  );
  assert.deepEqual(
    d.routes.map((r) => [r.family, r.dst, r.gw, r.src]),
    [
      [4, '10.42.2.0/24', 'fd00::2', '192.168.1.1'],
      [4, '10.42.3.0/24', '10.4.0.3', null],
      [6, 'fd42:3::/64', 'fd00::3', null],
    ],
  );
  assert.equal(d.problems.length, 1);
  assert.equal(d.problems[0]!.object, 'route fd42:2::/64 via 10.4.0.2 dev kilo');
  assert.equal(
    d.problems[0]!.message,
    'IPv6 destination fd42:2::/64 cannot have IPv4 gateway 10.4.0.2: Linux has no IPv4 next hop for IPv6 routes',
  );
  // What an earlier plan installed under that destination stays (as for every unexpressible route).
  assert.ok(d.protectedKeys.has('254 fd42:2::/64 1024'));
});

test('a gateway that is no address, or a source of the other family, is still refused', () => {
  const d = desiredState(
    [route('10.42.2.0/24', 'gateway'), route('10.42.3.0/24', 'fd00::3', { src: 'fd00::1' })],
    [],
    devices,
  );
  assert.deepEqual(
    d.problems.map((p) => p.message),
    ['gateway "gateway" is not an IP address', 'src "fd00::1" is not an IPv4 address'],
  );
});

const v4viaV6: KernelRoute = {
  family: 4,
  dst: '10.42.2.0/24',
  table: 254,
  metric: 0,
  gw: 'fd00::2',
  dev: 'kilo0',
  src: '192.168.1.1',
  onlink: true,
  type: 'unicast',
  protocol: 107,
};

test('ip -batch lines name the family of a gateway of the other family (via inet6 …)', () => {
  assert.equal(
    renderOp({ kind: 'route', action: 'replace', route: v4viaV6 }),
    'route replace 10.42.2.0/24 via inet6 fd00::2 dev kilo0 src 192.168.1.1 onlink table 254 metric 0 proto 107',
  );
  assert.equal(
    renderOp({ kind: 'route', action: 'add', route: { ...v4viaV6, gw: '10.4.0.2' } }),
    'route add 10.42.2.0/24 via 10.4.0.2 dev kilo0 src 192.168.1.1 onlink table 254 metric 0 proto 107',
  );
  assert.equal(describeRoute(v4viaV6), 'route 10.42.2.0/24 via inet6 fd00::2 dev kilo0 src 192.168.1.1 onlink');
});

test('ip -j shows such a gateway as "via": {family, host}; it reads back as the route that was written', () => {
  const read = parseRoutes(
    JSON.stringify([
      {
        dst: '10.42.2.0/24',
        via: { family: 'inet6', host: 'FD00:0:0::2' },
        dev: 'kilo0',
        prefsrc: '192.168.1.1',
        flags: ['onlink'],
      },
      { dst: '10.42.3.0/24', via: { family: 'inet', host: '10.4.0.3' }, dev: 'kilo0', flags: [] },
    ]),
    4,
    107,
  );
  assert.deepEqual(read[0], v4viaV6);
  assert.equal(read[1]!.gw, '10.4.0.3');
});

/** Both directions, straight to a machine (no plan): what the kernel takes, and its words when not. */
async function applyBoth(kernel: RouteKernel, dev: string): Promise<BatchResult> {
  const base = { table: 254, dev, src: null, onlink: true, type: 'unicast', protocol: 107 };
  const ops: RouteOp[] = [
    { kind: 'route', action: 'add', route: { ...base, family: 4, dst: '10.42.2.0/24', metric: 0, gw: 'fd00:99::2' } },
    { kind: 'route', action: 'add', route: { ...base, family: 6, dst: 'fd42:2::/64', metric: 1024, gw: '10.4.0.2' } },
  ];
  return kernel.apply(ops);
}

const refused = [{ index: 1, message: 'IPv6 does not support RTA_VIA attribute' }];

test('the model, like the kernel, takes an IPv4 route via IPv6 and refuses an IPv6 route via IPv4', async () => {
  const m = new FakeKernel();
  m.addLink('kilo0', { addresses: ['10.4.0.1/16'] });
  assert.deepEqual((await applyBoth(new FakeRoutes(m), 'kilo0')).failures, refused);
  assert.deepEqual(
    m.routes.map((r) => describeRoute(r)),
    ['route 10.42.2.0/24 via inet6 fd00:99::2 dev kilo0 onlink'],
  );
});

describe('the kernel on the interfaces Kilo routes over', { skip: skipNoNetns }, () => {
  // netnsExec binds a per-namespace directory over this path; wireguard-go would create it anyway.
  before(() => mkdirSync('/var/run/wireguard', { recursive: true }));

  for (const kind of ['veth', 'wireguard-go'] as const) {
    test(`${kind}: an IPv4 route via IPv6 is taken and reads back unchanged; IPv6 via IPv4 is refused`, async (t) => {
      const ns = createNamespace('ktmix');
      t.after(() => ns.destroy());
      if (kind === 'veth') ns.sh('ip link add kilo0 type veth peer name kilo1 && ip link set kilo1 up');
      else {
        const device = createWireGuardDevice(ns.exec, { name: 'kilo0' });
        t.after(() => device.destroy());
        await device.ensure();
      }
      ns.sh('ip addr add 10.4.0.1/16 dev kilo0 && ip link set kilo0 up');
      const exec = ipExec(ns);
      assert.deepEqual((await applyBoth(new IprouteRoutes(exec), 'kilo0')).failures, refused);

      // The whole path: plan routes in, one problem out, and a second reconcile writes nothing.
      const tables = linuxRoutingTables(exec);
      // 10.42.2.0/24 is the route just installed: read back, it equals the plan's and is left alone.
      const plan = [
        route('10.42.2.0/24', 'fd00:99::2'),
        route('10.42.3.0/24', 'fd00:99::3'),
        route('fd42:3::/64', '10.4.0.3'),
      ];
      for (const round of [1, 2]) {
        const err = (await tables.reconcile(plan, [], devices).catch((e: unknown) => e)) as PartialApplyError;
        assert.ok(err instanceof PartialApplyError, String(err));
        assert.deepEqual(
          err.failures.map((f) => f.object),
          ['route fd42:3::/64 via 10.4.0.3 dev kilo'],
        );
        assert.deepEqual(
          err.ops.details,
          round === 1 ? ['add route 10.42.3.0/24 via inet6 fd00:99::3 dev kilo0 onlink'] : [],
        );
      }
      assert.deepEqual((await tables.read()).routes.map(describeRoute).sort(), [
        'route 10.42.2.0/24 via inet6 fd00:99::2 dev kilo0 onlink',
        'route 10.42.3.0/24 via inet6 fd00:99::3 dev kilo0 onlink',
      ]);
    });
  }
});
