import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { peerNames, planFor, routeLines, ruleLines, sorted, twoLocations } from '../helpers/cluster.js';

const cross = { granularity: 'cross' as const };

describe('cross granularity: WireGuard', () => {
  test('every node leads, with the nodes of other locations and every Peer as WireGuard peers', () => {
    const want: Record<string, string[]> = {
      'eu-a': ['us-a', 'us-b', 'laptop'],
      'eu-b': ['us-a', 'us-b', 'laptop'],
      'eu-c': ['us-a', 'us-b', 'laptop'],
      'us-a': ['eu-a', 'eu-b', 'eu-c', 'laptop'],
      'us-b': ['eu-a', 'eu-b', 'eu-c', 'laptop'],
    };
    Object.entries(want).forEach(([host, peers], i) => {
      const plan = planFor(twoLocations(), host, cross);
      assert.equal(plan.leader, true, host);
      assert.equal(plan.interfaceUp, true, host);
      assert.equal(plan.wireGuardIP, `10.4.0.${i + 1}/16`, host);
      assert.deepEqual(peerNames(plan), peers, host);
    });
  });

  test("the listen port is the own endpoint's port", () => {
    assert.equal(planFor(twoLocations(), 'us-a', cross).listenPort, 51821);
  });
});

describe('cross granularity: routes', () => {
  // WireGuard IPs: eu-a .1, eu-b .2, eu-c .3, us-a .4, us-b .5 (node:… keys in string order).
  const remote = [
    '10.2.8.0/24 via 10.4.0.4 dev kilo src 10.1.0.2 onlink',
    '10.8.0.1/32 via 10.4.0.4 dev kilo src 10.1.0.2 onlink',
    '10.2.9.0/24 via 10.4.0.5 dev kilo src 10.1.0.2 onlink',
    '10.5.0.1/32 dev kilo src 10.1.0.2',
  ];

  test('--encapsulate always: location mates through the tunnel; every node has the kilo rules', () => {
    const plan = planFor(twoLocations(), 'eu-b', { ...cross, encapsulate: 'always', local: true });
    assert.deepEqual(
      sorted(routeLines(plan)),
      sorted([
        ...remote,
        '10.2.1.0/24 via 10.1.0.1 dev tunnel onlink',
        '10.1.0.1/32 via 10.1.0.1 dev tunnel table 1107 onlink',
        '10.2.3.0/24 via 10.1.1.3 dev tunnel onlink',
        '10.1.1.3/32 via 10.1.1.3 dev tunnel table 1107 onlink',
      ]),
    );
    assert.deepEqual(
      sorted(ruleLines(plan)),
      sorted([
        'from 10.2.2.0/24 to 10.1.0.1/32 lookup 1107',
        'iif kilo to 10.1.0.1/32 lookup 1107',
        'from 10.2.2.0/24 to 10.1.1.3/32 lookup 1107',
        'iif kilo to 10.1.1.3/32 lookup 1107',
      ]),
    );
  });

  test('--encapsulate crosssubnet: only the mate in another subnet through the tunnel', () => {
    const plan = planFor(twoLocations(), 'eu-b', { ...cross, encapsulate: 'crosssubnet', local: true });
    assert.deepEqual(
      sorted(routeLines(plan)),
      sorted([
        ...remote,
        '10.2.1.0/24 via 10.1.0.1 dev private onlink',
        '10.2.3.0/24 via 10.1.1.3 dev tunnel onlink',
        '10.1.1.3/32 via 10.1.1.3 dev tunnel table 1107 onlink',
      ]),
    );
    assert.deepEqual(
      sorted(ruleLines(plan)),
      sorted(['from 10.2.2.0/24 to 10.1.1.3/32 lookup 1107', 'iif kilo to 10.1.1.3/32 lookup 1107']),
    );
  });

  test('--encapsulate never: location mates over the private interface, no rules', () => {
    const plan = planFor(twoLocations(), 'eu-b', { ...cross, encapsulate: 'never', local: true });
    assert.deepEqual(
      sorted(routeLines(plan)),
      sorted([...remote, '10.2.1.0/24 via 10.1.0.1 dev private onlink', '10.2.3.0/24 via 10.1.1.3 dev private onlink']),
    );
    assert.deepEqual(plan.rules, []);
  });

  test('--local=false: only WireGuard routes', () => {
    const plan = planFor(twoLocations(), 'eu-b', { ...cross, encapsulate: 'always', local: false });
    assert.deepEqual(sorted(routeLines(plan)), sorted(remote));
    assert.deepEqual(plan.rules, []);
  });

  test('no node routes a location mate through WireGuard', () => {
    for (const host of ['eu-a', 'eu-b', 'eu-c']) {
      const lines = routeLines(planFor(twoLocations(), host, cross));
      for (const pod of ['10.2.1.0/24', '10.2.2.0/24', '10.2.3.0/24']) {
        assert.ok(!lines.some((r) => r.startsWith(pod) && r.includes('dev kilo')), `${host} → ${pod}`);
      }
    }
  });
});
