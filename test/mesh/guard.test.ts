import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { planGuard } from '../../src/mesh/guard.js';
import { hostTable, type Plan } from '../../src/mesh/types.js';
import { planFor, twoLocations } from '../helpers/cluster.js';

const location = { granularity: 'location' as const, encapsulate: 'never' as const };
const guardLines = (p: Plan) => (p.guard ?? []).map((g) => `${g.dst} ${g.table}`);
/** The plan's routes through kilo, as the guard names them. */
const throughKilo = (p: Plan) => p.routes.filter((r) => r.dev === 'kilo').map((r) => `${r.dst} ${r.table}`);

describe('the fail-closed guard of a plan', () => {
  test('a leader: the WireGuard network, then every destination it routes through kilo, each once', () => {
    const plan = planFor(twoLocations(), 'eu-a', location);
    const lines = guardLines(plan);
    assert.equal(lines[0], '10.4.0.0/16 main', "the interface's connected route goes with it too");
    assert.deepEqual(lines.slice(1), [...new Set(throughKilo(plan))]);
    // Remote pod CIDRs, remote internal IPs and the Peer's allowed IP are among them.
    for (const want of ['10.2.8.0/24 main', '10.8.0.1/32 main', '10.5.0.1/32 main'])
      assert.ok(lines.includes(want), `${want} in ${lines.join(', ')}`);
    // Nothing the plan sends in the clear over the private network: the own location's pods.
    assert.ok(!lines.includes('10.2.2.0/24 main'));
  });

  test('a follower routes nothing through kilo: no guard (its leader guards the tunnel)', () => {
    const plan = planFor(twoLocations(), 'eu-b', location);
    assert.equal(plan.leader, false);
    assert.deepEqual(plan.guard, []);
  });

  test('IPv6 destinations and table 1108 (--route-host-traffic) are guarded where they are routed', () => {
    const objects = twoLocations({
      'us-a': { podCIDRs: ['10.2.8.0/24', 'fd42:8::/64'] },
    });
    const plan = planFor(objects, 'eu-a', { ...location, routeHostTraffic: true });
    const lines = guardLines(plan);
    assert.ok(lines.includes('fd42:8::/64 main'), lines.join(', '));
    assert.ok(lines.includes(`10.8.0.1/32 ${hostTable}`), lines.join(', '));
    assert.ok(!lines.includes('10.8.0.1/32 main'), 'internal IPs are routed in 1108 only');
  });

  test('from routes alone: only role kilo counts, duplicates go, the WireGuard networks first', () => {
    const r = (dst: string, dev: 'kilo' | 'private', table: 'main' | typeof hostTable = 'main') => ({
      dst,
      gw: null,
      dev,
      src: null,
      table,
      onlink: false,
    });
    const guard = planGuard(
      [
        r('10.2.8.0/24', 'kilo'),
        r('10.2.2.0/24', 'private'),
        r('10.2.8.0/24', 'kilo'),
        r('10.8.0.1/32', 'kilo', hostTable),
      ],
      ['10.4.0.1/16', 'fd00:4::1/64'],
    );
    assert.deepEqual(guard, [
      { dst: '10.4.0.0/16', table: 'main' },
      { dst: 'fd00:4::/64', table: 'main' },
      { dst: '10.2.8.0/24', table: 'main' },
      { dst: '10.8.0.1/32', table: hostTable },
    ]);
  });
});
