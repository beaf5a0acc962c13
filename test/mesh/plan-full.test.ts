import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { peer, peerNames, planFor, routeLines, sorted, twoLocations, wgKey } from '../helpers/cluster.js';

const full = { granularity: 'full' as const };
const hosts = ['eu-a', 'eu-b', 'eu-c', 'us-a', 'us-b'];

describe('full granularity', () => {
  test('every node leads, with every other node and every Peer as WireGuard peers', () => {
    hosts.forEach((host, i) => {
      const plan = planFor(twoLocations(), host, full);
      assert.equal(plan.leader, true, host);
      assert.equal(plan.interfaceUp, true, host);
      assert.equal(plan.wireGuardIP, `10.4.0.${i + 1}/16`, host);
      assert.deepEqual(peerNames(plan), [...hosts.filter((h) => h !== host), 'laptop'], host);
      for (const p of plan.peers.filter((p) => p.kind === 'segment')) assert.equal(p.publicKey, wgKey(p.names[0]!));
    });
  });

  test("a node's WireGuard peer carries its pod CIDR, internal IP and WireGuard IP", () => {
    const plan = planFor(twoLocations(), 'eu-a', full);
    const euB = plan.peers.find((p) => p.names[0] === 'eu-b')!;
    assert.equal(euB.endpoint, '10.1.0.2:51820');
    assert.deepEqual(sorted(euB.allowedIPs), sorted(['10.2.2.0/24', '10.1.0.2/32', '10.4.0.2/32']));
  });

  const euBRoutes = [
    '10.2.1.0/24 via 10.4.0.1 dev kilo src 10.1.0.2 onlink',
    '10.1.0.1/32 via 10.4.0.1 dev kilo src 10.1.0.2 onlink',
    '10.2.3.0/24 via 10.4.0.3 dev kilo src 10.1.0.2 onlink',
    '10.2.8.0/24 via 10.4.0.4 dev kilo src 10.1.0.2 onlink',
    '10.8.0.1/32 via 10.4.0.4 dev kilo src 10.1.0.2 onlink',
    '10.2.9.0/24 via 10.4.0.5 dev kilo src 10.1.0.2 onlink',
    '10.5.0.1/32 dev kilo src 10.1.0.2',
  ];
  for (const encapsulate of ['never', 'crosssubnet', 'always'] as const) {
    for (const local of [true, false]) {
      test(`--encapsulate ${encapsulate} --local=${local}: everything via WireGuard, nothing in the clear`, () => {
        // eu-c and us-b are dialled at their internal IPs: no /32 route through their own tunnel.
        const plan = planFor(twoLocations(), 'eu-b', { ...full, encapsulate, local });
        assert.deepEqual(sorted(routeLines(plan)), sorted(euBRoutes));
        assert.deepEqual(plan.rules, []);
      });
    }
  }

  test('IPv6 and DNS endpoints are written as WireGuard expects them', () => {
    const objs = twoLocations({
      'eu-b': { endpoint: '[2001:db8::2]:51822' },
      'eu-c': { forceEndpoint: 'eu-c.example.com:51823' },
    });
    const plan = planFor(objs, 'eu-a', full);
    assert.equal(plan.peers.find((p) => p.names[0] === 'eu-b')!.endpoint, '[2001:db8::2]:51822');
    assert.equal(plan.peers.find((p) => p.names[0] === 'eu-c')!.endpoint, 'eu-c.example.com:51823');
    assert.equal(planFor(objs, 'eu-b', full).listenPort, 51822);
    assert.equal(planFor(objs, 'eu-c', full).listenPort, 51823);
  });

  test('a Peer without an endpoint is a WireGuard peer without one; its preshared key is carried', () => {
    const psk = wgKey('psk');
    const objs = [
      ...twoLocations().filter((o) => o.kind === 'Node'),
      peer('laptop', { allowedIPs: ['10.5.0.1/32'], presharedKey: psk }),
    ];
    const laptop = planFor(objs, 'us-b', full).peers.at(-1)!;
    assert.equal(laptop.kind, 'peer');
    assert.equal(laptop.endpoint, null);
    assert.equal(laptop.presharedKey, psk);
  });

  test("a route's src is of the route's family: an IPv6 Peer IP gets no IPv4 source", () => {
    const objs = [
      ...twoLocations().filter((o) => o.kind === 'Node'),
      peer('phone', { allowedIPs: ['10.5.0.2/32', 'fd05::2/128'] }),
    ];
    const lines = routeLines(planFor(objs, 'eu-a', full));
    assert.ok(lines.includes('10.5.0.2/32 dev kilo src 10.1.0.1'), lines.join('\n'));
    assert.ok(lines.includes('fd05::2/128 dev kilo'), lines.join('\n'));
    const v6 = twoLocations({ 'eu-a': { internalIP: 'fd01::1/64' } });
    const v6lines = routeLines(planFor(v6, 'eu-a', full));
    assert.ok(v6lines.includes('10.2.2.0/24 via 10.4.0.2 dev kilo onlink'), v6lines.join('\n'));
  });
});
