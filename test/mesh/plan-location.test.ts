import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { peerNames, planFor, routeLines, ruleLines, sorted, twoLocations, wgKey } from '../helpers/cluster.js';

const location = { granularity: 'location' as const };

describe('location granularity: WireGuard', () => {
  test("a leader has the other locations' leaders and every Peer as WireGuard peers", () => {
    const plan = planFor(twoLocations(), 'eu-a', location);
    assert.equal(plan.leader, true);
    assert.equal(plan.interfaceUp, true);
    assert.equal(plan.wireGuardIP, '10.4.0.1/16');
    assert.deepEqual(peerNames(plan), ['us-a+us-b', 'laptop']);
    const us = plan.peers[0]!;
    assert.equal(us.publicKey, wgKey('us-a'), "a segment is reached at its leader's key");
    assert.equal(us.endpoint, '198.51.100.8:51821', "and at its leader's endpoint");
    assert.deepEqual(
      sorted(us.allowedIPs),
      sorted(['10.2.8.0/24', '10.8.0.1/32', '10.2.9.0/24', '10.8.0.2/32', '10.4.0.2/32']),
    );
    assert.deepEqual(plan.peers[1]!.allowedIPs, ['10.5.0.1/32']);
  });

  test('a non-leader has no WireGuard peers, no WireGuard IP, and its interface down', () => {
    for (const host of ['eu-b', 'eu-c', 'us-b']) {
      const plan = planFor(twoLocations(), host, location);
      assert.equal(plan.leader, false, host);
      assert.deepEqual(plan.peers, [], host);
      assert.equal(plan.wireGuardIP, null, host);
      assert.equal(plan.interfaceUp, false, host);
    }
  });

  test("the listen port is the port of the node's own endpoint", () => {
    assert.equal(planFor(twoLocations(), 'us-a', location).listenPort, 51821);
    assert.equal(planFor(twoLocations(), 'eu-a', location).listenPort, 51820);
    const forced = twoLocations({ 'us-a': { forceEndpoint: 'us-a.example.com:4500' } });
    assert.equal(planFor(forced, 'us-a', location).listenPort, 4500);
    assert.equal(planFor(forced, 'eu-a', location).peers[0]!.endpoint, 'us-a.example.com:4500');
  });

  test('a node without an internal IP is a segment of its own, reached over WireGuard by its location', () => {
    const objs = twoLocations({ 'eu-c': { internalIP: '' } });
    const euA = planFor(objs, 'eu-a', location);
    assert.deepEqual(peerNames(euA), ['us-a+us-b', 'eu-c', 'laptop']);
    const euC = planFor(objs, 'eu-c', location);
    assert.equal(euC.leader, true);
    assert.equal(euC.wireGuardIP, '10.4.0.3/16');
    assert.deepEqual(peerNames(euC), ['eu-a+eu-b', 'us-a+us-b', 'laptop']);
    assert.ok(
      routeLines(euC).every((r) => r.includes('dev kilo') && !r.includes(' src ')),
      'no internal IP: no src',
    );
  });
});

describe('location granularity: leader routes', () => {
  const remote = [
    '10.2.8.0/24 via 10.4.0.2 dev kilo src 10.1.0.1 onlink',
    '10.8.0.1/32 via 10.4.0.2 dev kilo src 10.1.0.1 onlink',
    '10.2.9.0/24 via 10.4.0.2 dev kilo src 10.1.0.1 onlink',
    '10.8.0.2/32 via 10.4.0.2 dev kilo src 10.1.0.1 onlink',
    '10.5.0.1/32 dev kilo src 10.1.0.1',
  ];

  test('--encapsulate always: location mates through the tunnel, table 1107, rules from the pod CIDR and from kilo', () => {
    const plan = planFor(twoLocations(), 'eu-a', { ...location, encapsulate: 'always', local: true });
    assert.deepEqual(
      sorted(routeLines(plan)),
      sorted([
        ...remote,
        '10.2.2.0/24 via 10.1.0.2 dev tunnel onlink',
        '10.1.0.2/32 via 10.1.0.2 dev tunnel table 1107 onlink',
        '10.2.3.0/24 via 10.1.1.3 dev tunnel onlink',
        '10.1.1.3/32 via 10.1.1.3 dev tunnel table 1107 onlink',
      ]),
    );
    assert.deepEqual(
      sorted(ruleLines(plan)),
      sorted([
        'from 10.2.1.0/24 to 10.1.0.2/32 lookup 1107',
        'iif kilo to 10.1.0.2/32 lookup 1107',
        'from 10.2.1.0/24 to 10.1.1.3/32 lookup 1107',
        'iif kilo to 10.1.1.3/32 lookup 1107',
      ]),
    );
  });

  test('--encapsulate crosssubnet: only the mate outside the private subnet goes through the tunnel', () => {
    const plan = planFor(twoLocations(), 'eu-a', { ...location, encapsulate: 'crosssubnet', local: true });
    assert.deepEqual(
      sorted(routeLines(plan)),
      sorted([
        ...remote,
        '10.2.2.0/24 via 10.1.0.2 dev private onlink',
        '10.2.3.0/24 via 10.1.1.3 dev tunnel onlink',
        '10.1.1.3/32 via 10.1.1.3 dev tunnel table 1107 onlink',
      ]),
    );
    assert.deepEqual(
      sorted(ruleLines(plan)),
      sorted(['from 10.2.1.0/24 to 10.1.1.3/32 lookup 1107', 'iif kilo to 10.1.1.3/32 lookup 1107']),
    );
  });

  test('--encapsulate never: location mates over the private interface, no table 1107, no rules', () => {
    const plan = planFor(twoLocations(), 'eu-a', { ...location, encapsulate: 'never', local: true });
    assert.deepEqual(
      sorted(routeLines(plan)),
      sorted([...remote, '10.2.2.0/24 via 10.1.0.2 dev private onlink', '10.2.3.0/24 via 10.1.1.3 dev private onlink']),
    );
    assert.deepEqual(plan.rules, []);
  });

  test('--local=false: no routes to location mates, no rules', () => {
    for (const encapsulate of ['never', 'crosssubnet', 'always'] as const) {
      const plan = planFor(twoLocations(), 'eu-a', { ...location, encapsulate, local: false });
      assert.deepEqual(sorted(routeLines(plan)), sorted(remote), encapsulate);
      assert.deepEqual(plan.rules, [], encapsulate);
    }
  });

  test("the internal-IP route is omitted when it equals the segment's endpoint IP", () => {
    const objs = twoLocations({ 'us-a': { endpoint: '10.8.0.1:51821' } });
    const lines = routeLines(planFor(objs, 'eu-a', { ...location, local: false }));
    assert.ok(!lines.some((r) => r.startsWith('10.8.0.1/32')), lines.join('\n'));
    assert.ok(lines.includes('10.8.0.2/32 via 10.4.0.2 dev kilo src 10.1.0.1 onlink'), 'other members keep theirs');
  });

  test('with a discovered endpoint, the comparison is with the endpoint actually dialled', () => {
    const objs = twoLocations({
      'us-a': { endpoint: '10.8.0.1:51821', keepalive: 10 },
      'eu-a': { discovered: { [wgKey('us-a')]: { IP: '203.0.113.8', Port: 30000 } } },
    });
    const plan = planFor(objs, 'eu-a', { ...location, local: false });
    assert.equal(plan.peers[0]!.endpoint, '203.0.113.8:30000');
    assert.ok(routeLines(plan).includes('10.8.0.1/32 via 10.4.0.2 dev kilo src 10.1.0.1 onlink'));
  });
});

describe('location granularity: non-leader routes', () => {
  const viaLeader = (dev: string) => [
    `10.4.0.1/32 via 10.1.0.1 dev ${dev} onlink`,
    `10.4.0.2/32 via 10.1.0.1 dev ${dev} onlink`,
    `10.2.8.0/24 via 10.1.0.1 dev ${dev} onlink`,
    `10.2.9.0/24 via 10.1.0.1 dev ${dev} onlink`,
    `10.8.0.1/32 via 10.1.0.1 dev ${dev} onlink`,
    `10.8.0.2/32 via 10.1.0.1 dev ${dev} onlink`,
    `10.5.0.1/32 via 10.1.0.1 dev ${dev} onlink`,
  ];

  test('--encapsulate always: everything remote via the leader through the tunnel; no kilo rules', () => {
    const plan = planFor(twoLocations(), 'eu-b', { ...location, encapsulate: 'always', local: true });
    assert.deepEqual(
      sorted(routeLines(plan)),
      sorted([
        ...viaLeader('tunnel'),
        '10.2.1.0/24 via 10.1.0.1 dev tunnel onlink',
        '10.1.0.1/32 via 10.1.0.1 dev tunnel table 1107 onlink',
        '10.2.3.0/24 via 10.1.1.3 dev tunnel onlink',
        '10.1.1.3/32 via 10.1.1.3 dev tunnel table 1107 onlink',
      ]),
    );
    assert.deepEqual(
      sorted(ruleLines(plan)),
      sorted(['from 10.2.2.0/24 to 10.1.0.1/32 lookup 1107', 'from 10.2.2.0/24 to 10.1.1.3/32 lookup 1107']),
    );
  });

  test('--encapsulate crosssubnet: the leader in the same subnet is reached in the clear', () => {
    const plan = planFor(twoLocations(), 'eu-b', { ...location, encapsulate: 'crosssubnet', local: true });
    assert.deepEqual(
      sorted(routeLines(plan)),
      sorted([
        ...viaLeader('private'),
        '10.2.1.0/24 via 10.1.0.1 dev private onlink',
        '10.2.3.0/24 via 10.1.1.3 dev tunnel onlink',
        '10.1.1.3/32 via 10.1.1.3 dev tunnel table 1107 onlink',
      ]),
    );
    assert.deepEqual(ruleLines(plan), ['from 10.2.2.0/24 to 10.1.1.3/32 lookup 1107']);
  });

  test("--encapsulate crosssubnet: a follower outside the leader's subnet reaches it through the tunnel", () => {
    const lines = routeLines(planFor(twoLocations(), 'eu-c', { ...location, encapsulate: 'crosssubnet', local: true }));
    assert.ok(lines.includes('10.2.8.0/24 via 10.1.0.1 dev tunnel onlink'), lines.join('\n'));
    assert.ok(lines.includes('10.2.2.0/24 via 10.1.0.2 dev tunnel onlink'));
  });

  test('--encapsulate never: everything over the private interface, no rules', () => {
    const plan = planFor(twoLocations(), 'eu-b', { ...location, encapsulate: 'never', local: true });
    assert.deepEqual(
      sorted(routeLines(plan)),
      sorted([
        ...viaLeader('private'),
        '10.2.1.0/24 via 10.1.0.1 dev private onlink',
        '10.2.3.0/24 via 10.1.1.3 dev private onlink',
      ]),
    );
    assert.deepEqual(plan.rules, []);
  });

  test("--local=false: remote traffic still goes via the leader; no routes to mates' pods", () => {
    const plan = planFor(twoLocations(), 'eu-b', { ...location, encapsulate: 'never', local: false });
    assert.deepEqual(sorted(routeLines(plan)), sorted(viaLeader('private')));
    assert.deepEqual(plan.rules, []);
  });

  test('an allowed-location IP of another location is routed via the leader', () => {
    const objs = twoLocations({ 'us-b': { allowedLocationIPs: '192.168.80.0/24' } });
    assert.ok(
      routeLines(planFor(objs, 'eu-b', { ...location, encapsulate: 'never' })).includes(
        '192.168.80.0/24 via 10.1.0.1 dev private onlink',
      ),
    );
    assert.ok(
      routeLines(planFor(objs, 'eu-a', { ...location, encapsulate: 'never' })).includes(
        '192.168.80.0/24 via 10.4.0.2 dev kilo src 10.1.0.1 onlink',
      ),
    );
    const usA = planFor(objs, 'us-a', { ...location, encapsulate: 'never' });
    assert.ok(
      !routeLines(usA).some((r) => r.startsWith('192.168.80.0/24')),
      "the own location's allowed-location IP is not routed",
    );
  });
});
