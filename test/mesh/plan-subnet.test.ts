import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { peerNames, planFor, routeLines, ruleLines, sorted, topologyFor, twoLocations } from '../helpers/cluster.js';

const subnet = { granularity: 'subnet' as const };

describe('subnet granularity: groups', () => {
  test('nodes are grouped by location and internal-IP network', () => {
    const t = topologyFor(twoLocations(), 'eu-a', subnet);
    assert.deepEqual(
      t.segments.map((s) => `${s.key} ${s.group}`),
      [
        'node:eu-a subnet:eu/10.1.0.0/24',
        'node:eu-b subnet:eu/10.1.0.0/24',
        'node:eu-c subnet:eu/10.1.1.0/24',
        'node:us-a subnet:us/10.8.0.0/24',
        'node:us-b subnet:us/10.8.0.0/24',
      ],
    );
  });

  test('WireGuard peers: every node outside the own group, and every Peer', () => {
    const want: Record<string, string[]> = {
      'eu-a': ['eu-c', 'us-a', 'us-b', 'laptop'],
      'eu-b': ['eu-c', 'us-a', 'us-b', 'laptop'],
      'eu-c': ['eu-a', 'eu-b', 'us-a', 'us-b', 'laptop'],
      'us-a': ['eu-a', 'eu-b', 'eu-c', 'laptop'],
    };
    Object.entries(want).forEach(([host, peers]) => {
      const plan = planFor(twoLocations(), host, subnet);
      assert.equal(plan.leader, true, host);
      assert.equal(plan.interfaceUp, true, host);
      assert.deepEqual(peerNames(plan), peers, host);
    });
  });

  test('the same network in another location is another group', () => {
    const objs = twoLocations({ 'us-b': { internalIP: '10.1.0.9/24', endpoint: '10.1.0.9:51820' } });
    assert.deepEqual(peerNames(planFor(objs, 'eu-a', subnet)), ['eu-c', 'us-a', 'us-b', 'laptop']);
  });

  test('nodes without a location share a group by network', () => {
    const objs = twoLocations({ 'eu-a': { location: '' }, 'eu-b': { location: '' } });
    assert.deepEqual(peerNames(planFor(objs, 'eu-a', subnet)), ['eu-c', 'us-a', 'us-b', 'laptop']);
  });

  test('a node without an internal IP is a group of its own', () => {
    const objs = twoLocations({ 'eu-b': { internalIP: '' } });
    assert.deepEqual(peerNames(planFor(objs, 'eu-a', subnet)), ['eu-b', 'eu-c', 'us-a', 'us-b', 'laptop']);
    assert.deepEqual(peerNames(planFor(objs, 'eu-b', subnet)), ['eu-a', 'eu-c', 'us-a', 'us-b', 'laptop']);
  });
});

describe('subnet granularity: routes', () => {
  // WireGuard IPs: eu-a .1, eu-b .2, eu-c .3, us-a .4, us-b .5.
  const remote = [
    '10.2.3.0/24 via 10.4.0.3 dev kilo src 10.1.0.1 onlink',
    '10.2.8.0/24 via 10.4.0.4 dev kilo src 10.1.0.1 onlink',
    '10.8.0.1/32 via 10.4.0.4 dev kilo src 10.1.0.1 onlink',
    '10.2.9.0/24 via 10.4.0.5 dev kilo src 10.1.0.1 onlink',
    '10.5.0.1/32 dev kilo src 10.1.0.1',
  ];

  test('--encapsulate always: the group mate through the tunnel, with table 1107 and kilo rules', () => {
    const plan = planFor(twoLocations(), 'eu-a', { ...subnet, encapsulate: 'always', local: true });
    assert.deepEqual(
      sorted(routeLines(plan)),
      sorted([
        ...remote,
        '10.2.2.0/24 via 10.1.0.2 dev tunnel onlink',
        '10.1.0.2/32 via 10.1.0.2 dev tunnel table 1107 onlink',
      ]),
    );
    assert.deepEqual(
      sorted(ruleLines(plan)),
      sorted(['from 10.2.1.0/24 to 10.1.0.2/32 lookup 1107', 'iif kilo to 10.1.0.2/32 lookup 1107']),
    );
  });

  for (const encapsulate of ['never', 'crosssubnet'] as const) {
    test(`--encapsulate ${encapsulate}: the group mate shares the subnet, so it is reached in the clear`, () => {
      const plan = planFor(twoLocations(), 'eu-a', { ...subnet, encapsulate, local: true });
      assert.deepEqual(sorted(routeLines(plan)), sorted([...remote, '10.2.2.0/24 via 10.1.0.2 dev private onlink']));
      assert.deepEqual(plan.rules, []);
    });
  }

  test('--local=false: only WireGuard routes', () => {
    const plan = planFor(twoLocations(), 'eu-a', { ...subnet, encapsulate: 'always', local: false });
    assert.deepEqual(sorted(routeLines(plan)), sorted(remote));
    assert.deepEqual(plan.rules, []);
  });
});
