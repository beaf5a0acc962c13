/**
 * The fail-closed guard's routes in kernel form: how iproute2 prints and takes them (as checked in a
 * namespace, Linux 6.x: `-N` prints the type as its number, IPv6 gives a drop route the loopback),
 * and what the fake kernel refuses of them as Linux does.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeKernel, FakeKernelError } from '../../src/dataplane/routes/fake.js';
import { addGuard, guardRoute } from '../../src/dataplane/routes/guard.js';
import { parseRoutes, renderOp } from '../../src/dataplane/routes/iproute.js';
import { desiredState } from '../../src/dataplane/routes/state.js';

const devices = { kilo: 'kilo0', private: 'eth0', tunnel: null };

test('a guard route reads back from `ip -N -j` as the route written, in both families', () => {
  const v4 = guardRoute(4, '10.42.3.0/24', 254, 107);
  const v6 = guardRoute(6, 'fd42:3::/64', 1108, 107);
  assert.deepEqual(parseRoutes('[{"type":"6","dst":"10.42.3.0/24","metric":1,"flags":[]}]', 4, 107), [v4]);
  assert.deepEqual(
    parseRoutes(
      '[{"type":"6","dst":"fd42:3::/64","table":"1108","dev":"lo","metric":1025,"flags":[],"pref":"medium"}]',
      6,
      107,
    ),
    [v6],
  );
  assert.equal(
    renderOp({ kind: 'route', action: 'add', route: v4 }),
    'route add blackhole 10.42.3.0/24 table 254 metric 1 proto 107',
  );
  assert.equal(
    renderOp({ kind: 'route', action: 'add', route: v6 }),
    'route add blackhole fd42:3::/64 dev lo table 1108 metric 1025 proto 107',
  );
  assert.equal(
    renderOp({ kind: 'route', action: 'del', route: v6 }),
    'route del blackhole fd42:3::/64 table 1108 metric 1025 proto 107',
  );
});

test('a guard destination that is not a CIDR is a problem named; the rest is installed', () => {
  const state = desiredState([], [], devices);
  addGuard(
    state,
    [
      { dst: '10.42.3.0/24', table: 'main' },
      { dst: 'nonsense', table: 'main' },
      { dst: '10.42.3.0/24', table: 'main' },
    ],
    107,
  );
  assert.deepEqual(state.routes, [guardRoute(4, '10.42.3.0/24', 254, 107)]);
  assert.deepEqual(state.problems, [{ object: 'route blackhole nonsense', message: 'dst "nonsense" is not a CIDR' }]);
});

test('the fake kernel takes drop routes as Linux does: no IPv4 device, the loopback for IPv6, kept when links go', () => {
  const k = new FakeKernel();
  k.addLink('kilo0', { addresses: ['10.4.0.1/16'] });
  assert.throws(
    () => k.routeAdd({ ...guardRoute(4, '10.42.3.0/24', 254, 107), dev: 'kilo0' }),
    (e: unknown) => e instanceof FakeKernelError && /can not be specified for this route type/.test(e.message),
  );
  k.routeAdd(guardRoute(4, '10.42.3.0/24', 254, 107));
  k.routeAdd({ ...guardRoute(6, 'fd42:3::/64', 254, 107), dev: 'kilo0' });
  k.routeAdd({ ...guardRoute(4, '10.42.3.0/24', 254, 107), type: 'unicast', metric: 0, dev: 'kilo0' });
  k.deleteLink('kilo0');
  assert.deepEqual(
    k.routes.map((r) => `${r.type} ${r.dst} ${r.dev}`),
    ['blackhole 10.42.3.0/24 null', 'blackhole fd42:3::/64 lo'],
  );
});
