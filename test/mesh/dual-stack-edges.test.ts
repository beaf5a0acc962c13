/**
 * Dual-stack edge cases a careless operator or a cluster in transition produces
 * (docs/dual-stack.md#edge-cases), checked on the plan.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Annotation } from '../../src/model/annotations.js';
import type { MeshOptions } from '../../src/mesh/options.js';
import { Cidr } from '../../src/net/cidr.js';
import { node, peer, planFor, routeLines, ruleLines, topologyFor, wgKey, type NodeSpec } from '../helpers/cluster.js';
import { parseCluster } from '../../src/model/parse.js';
import { nodeConfig } from '../../src/cli/showconf-conf.js';
import { renderIni } from '../../src/wireguard/ini.js';
import type { KubeObject } from '../../src/model/parse.js';

const subnets = [Cidr.parse('10.4.0.0/16'), Cidr.parse('fd4b::/64')];
const dual = (granularity: MeshOptions['granularity'], extra: Partial<MeshOptions> = {}): Partial<MeshOptions> => ({
  granularity,
  subnet: subnets[0]!,
  subnets,
  ...extra,
});
const granularities = ['location', 'full', 'cross', 'subnet'] as const;

/** A dual-stack node: IPv4 in Kilo's annotations, IPv6 in the -ipv6 ones, pods of both families. */
function dualNode(name: string, n: number, extra: NodeSpec = {}): KubeObject {
  return node(name, {
    location: 'eu',
    internalIP: `10.1.0.${n}/24`,
    endpoint: `198.51.100.${n}:51820`,
    podCIDRs: [`10.2.${n}.0/24`, `fd42:${n}::/64`],
    ...extra,
    annotations: {
      [Annotation.internalIPv6]: `fd10:1::${n}/64`,
      [Annotation.endpointIPv6]: `[2001:db8:1::${n}]:51820`,
      ...(extra.annotations ?? {}),
    },
  });
}

/** An IPv6-only node (Kilo's annotations hold IPv6 values) of location eu. */
function v6Node(name: string, n: number, pods: string[]): KubeObject {
  return node(name, {
    location: 'eu',
    internalIP: `fd10:1::${n}/64`,
    endpoint: `[2001:db8:1::${n}]:51820`,
    podCIDRs: pods,
  });
}

/** us: a dual-stack location elsewhere. */
const us = () => [
  dualNode('us-a', 81, {
    location: 'us',
    internalIP: '10.8.0.1/24',
    annotations: { [Annotation.internalIPv6]: 'fd10:8::1/64', [Annotation.endpointIPv6]: '[2001:db8:8::1]:51820' },
  }),
];

describe('stale -ipv6 annotations on a node whose pods lost IPv6', () => {
  // eu-b was dual-stack; its podCIDRs now hold IPv4 only, its -ipv6 annotations are left over.
  const stale = () => [
    dualNode('eu-a', 1),
    dualNode('eu-b', 2, {
      podCIDRs: ['10.2.2.0/24'],
      annotations: {
        [Annotation.wireGuardIPv6]: 'fd4b::9/64',
        [Annotation.discoveredEndpointsIPv6]: JSON.stringify({
          [wgKey('laptop')]: { IP: '2001:db8:66::1', Port: 51820, Zone: '' },
        }),
      },
    }),
    ...us(),
    node('laptop', {}),
  ];

  test('no IPv6 allowed IP, route or endpoint comes from them, in any granularity', () => {
    for (const g of granularities) {
      for (const from of ['eu-a', 'us-a']) {
        const objects = stale().filter((o) => o.metadata!.name !== 'laptop');
        const plan = planFor(objects, from, dual(g));
        const lines = routeLines(plan);
        assert.ok(!lines.some((l) => l.includes('fd10:1::2')), `${g} ${from}:\n${lines.join('\n')}`);
        for (const p of plan.peers) {
          assert.ok(!p.allowedIPs.includes('fd10:1::2/128'), `${g} ${from}: ${p.allowedIPs.join(' ')}`);
          if (p.names.length === 1 && p.names[0] === 'eu-b')
            assert.equal(p.endpoint, '198.51.100.2:51820', `${g} ${from}`);
        }
      }
    }
  });

  test('an IPv6-only node dials it at nothing IPv6 it announced (no common family: Kilo’s endpoint)', () => {
    const objects = [
      ...stale().slice(0, 2),
      node('ap-a', {
        location: 'ap',
        internalIP: 'fd10:3::1/64',
        endpoint: '[2001:db8:3::1]:51820',
        podCIDRs: ['10.2.31.0/24', 'fd42:31::/64'],
      }),
    ];
    const plan = planFor(objects, 'ap-a', dual('full'));
    const b = plan.peers.find((p) => p.names.includes('eu-b'))!;
    assert.equal(b.endpoint, '198.51.100.2:51820');
  });

  test('its discovered IPv6 endpoints are not used by others', () => {
    const objects = [...stale().filter((o) => o.metadata!.name !== 'laptop')];
    // The roaming peer is a node with a keepalive that eu-b saw over IPv6.
    objects.push(
      node('laptop', {
        location: 'home',
        internalIP: '10.9.0.1/24',
        endpoint: '198.51.100.99:51820',
        podCIDRs: ['10.2.99.0/24', 'fd42:99::/64'],
        keepalive: 25,
      }),
    );
    const plan = planFor(objects, 'us-a', dual('location'));
    assert.equal(plan.peers.find((p) => p.names.includes('laptop'))!.endpoint, '198.51.100.99:51820');
  });

  test('with its IPv6 pod CIDR back, the annotations count again', () => {
    const objects = [dualNode('eu-a', 1), dualNode('eu-b', 2), ...us()];
    const plan = planFor(objects, 'us-a', dual('full'));
    assert.ok(plan.peers.find((p) => p.names.includes('eu-b'))!.allowedIPs.includes('fd10:1::2/128'));
  });
});

describe('an IPv6-only node and a dual-stack node in one location', () => {
  for (const pods of [['10.2.3.0/24', 'fd42:3::/64'], ['fd42:3::/64']]) {
    const mixed = () => [dualNode('eu-a', 1), v6Node('eu-c', 3, pods), ...us()];
    const label = pods.length === 2 ? 'pods of both families' : 'IPv6-only pods';

    test(`${label}: mates reach each other's pods in every family both have, over the LAN family both have`, () => {
      for (const g of ['location', 'cross', 'subnet'] as const) {
        for (const encapsulate of ['never', 'always', 'crosssubnet'] as const) {
          const opts = dual(g, { encapsulate });
          const a = routeLines(planFor(mixed(), 'eu-a', opts));
          const c = routeLines(planFor(mixed(), 'eu-c', opts));
          const ctx = `${g} ${encapsulate}`;
          // In subnet granularity each is its own group (different internal networks): WireGuard.
          if (g === 'subnet') {
            assert.ok(!a.some((l) => l.startsWith('fd42:3::/64 via fd10')), `${ctx}:\n${a.join('\n')}`);
            continue;
          }
          // The dual-stack node reaches the IPv6-only one at its IPv6 address, never through tunl0.
          assert.ok(a.includes('fd42:3::/64 via fd10:1::3 dev private onlink'), `${ctx} eu-a:\n${a.join('\n')}`);
          if (pods.length === 2)
            assert.ok(a.includes('10.2.3.0/24 via fd10:1::3 dev private onlink'), `${ctx} eu-a:\n${a.join('\n')}`);
          else assert.ok(!a.some((l) => l.startsWith('10.2.3.')), `${ctx} eu-a:\n${a.join('\n')}`);
          // The IPv6-only node has no IPv4 on the LAN: both families to eu-a over IPv6.
          assert.ok(c.includes('fd42:1::/64 via fd10:1::1 dev private onlink'), `${ctx} eu-c:\n${c.join('\n')}`);
          assert.ok(c.includes('10.2.1.0/24 via fd10:1::1 dev private onlink'), `${ctx} eu-c:\n${c.join('\n')}`);
          for (const l of [...a, ...c]) {
            assert.ok(!/dev tunnel/.test(l) || !l.includes(':'), `${ctx}: IPv6 through tunl0: ${l}`);
            assert.ok(!l.includes('via 10.1.0.') || !l.startsWith('fd'), `${ctx}: IPv6 via IPv4: ${l}`);
          }
          // eu-c never routes to eu-a's IPv4 address: it has none on the LAN.
          assert.ok(!c.some((l) => / via 10\.1\.0\.1 /.test(l)), `${ctx} eu-c:\n${c.join('\n')}`);
        }
      }
    });
  }

  test('location: a dual-stack leader is reached by its IPv6-only follower over IPv6', () => {
    const objects = [dualNode('eu-a', 1, { leader: true }), v6Node('eu-c', 3, ['10.2.3.0/24', 'fd42:3::/64']), ...us()];
    const plan = planFor(objects, 'eu-c', dual('location', { encapsulate: 'always' }));
    assert.equal(plan.segment.leader, 'eu-a');
    const lines = routeLines(plan);
    for (const want of [
      '10.2.81.0/24 via fd10:1::1 dev private onlink',
      'fd42:81::/64 via fd10:1::1 dev private onlink',
      '10.4.0.2/32 via fd10:1::1 dev private onlink',
      'fd4b::2/128 via fd10:1::1 dev private onlink',
    ])
      assert.ok(lines.includes(want), `${want} in\n${lines.join('\n')}`);
    assert.deepEqual(ruleLines(plan), []);
  });

  test('location: an IPv6-only leader is reached by its dual-stack follower over IPv6', () => {
    const objects = [dualNode('eu-a', 1), v6Node('eu-c', 3, ['10.2.3.0/24', 'fd42:3::/64']), ...us()];
    const opts = dual('location', { encapsulate: 'always' });
    const t = planFor(
      objects.map((o) =>
        o.metadata!.name === 'eu-c'
          ? {
              ...o,
              metadata: { ...o.metadata, annotations: { ...o.metadata!.annotations, [Annotation.leader]: 'true' } },
            }
          : o,
      ),
      'eu-a',
      opts,
    );
    assert.equal(t.segment.leader, 'eu-c');
    const lines = routeLines(t);
    assert.ok(lines.includes('10.2.81.0/24 via fd10:1::3 dev private onlink'), lines.join('\n'));
    assert.ok(lines.includes('fd42:81::/64 via fd10:1::3 dev private onlink'), lines.join('\n'));
    assert.ok(!lines.some((l) => l.includes('dev tunnel')), lines.join('\n'));
  });

  test('location: a follower sharing no LAN family with its leader gets no route to it', () => {
    // eu-d: IPv4 only; eu-c: IPv6 only and the leader.
    const objects = [
      node('eu-d', {
        location: 'eu',
        internalIP: '10.1.0.4/24',
        endpoint: '198.51.100.4:51820',
        podCIDRs: ['10.2.4.0/24'],
      }),
      node('eu-c', {
        location: 'eu',
        internalIP: 'fd10:1::3/64',
        endpoint: '[2001:db8:1::3]:51820',
        podCIDRs: ['10.2.3.0/24', 'fd42:3::/64'],
        leader: true,
      }),
      ...us(),
    ];
    const plan = planFor(objects, 'eu-d', dual('location'));
    assert.equal(plan.segment.leader, 'eu-c');
    assert.deepEqual(routeLines(plan), []);
  });
});

describe('--encapsulate always and crosssubnet in a dual-stack cluster', () => {
  test('IPv4 to a dual-stack mate goes through tunl0 with one IPv4 rule per mate; IPv6 in the clear', () => {
    for (const encapsulate of ['always', 'crosssubnet'] as const) {
      const objects = [
        dualNode('eu-a', 1),
        // In another IPv4 subnet, so crosssubnet encapsulates too; the same IPv6 LAN.
        dualNode('eu-b', 2, { internalIP: '10.1.1.2/24' }),
        ...us(),
      ];
      const plan = planFor(objects, 'eu-a', dual('cross', { encapsulate }));
      const lines = routeLines(plan);
      assert.ok(lines.includes('10.2.2.0/24 via 10.1.1.2 dev tunnel onlink'), `${encapsulate}:\n${lines.join('\n')}`);
      assert.ok(lines.includes('fd42:2::/64 via fd10:1::2 dev private onlink'), `${encapsulate}:\n${lines.join('\n')}`);
      assert.ok(!lines.some((l) => l.includes('dev tunnel') && l.includes(':')), lines.join('\n'));
      const rules = ruleLines(plan);
      assert.deepEqual(rules, ['from 10.2.1.0/24 to 10.1.1.2/32 lookup 1107', 'iif kilo to 10.1.1.2/32 lookup 1107']);
    }
  });

  test('an IPv6 gateway never goes through tunl0, and gets no table-1107 rule', () => {
    const objects = [dualNode('eu-a', 1), v6Node('eu-c', 3, ['10.2.3.0/24', 'fd42:3::/64']), ...us()];
    for (const encapsulate of ['always', 'crosssubnet'] as const) {
      const plan = planFor(objects, 'eu-a', dual('cross', { encapsulate }));
      assert.ok(!routeLines(plan).some((l) => l.includes('dev tunnel')), routeLines(plan).join('\n'));
      assert.deepEqual(ruleLines(plan), [], encapsulate);
    }
  });
});

describe('a Peer whose allowed IPs are dropped', () => {
  const mesh = () => [
    dualNode('eu-a', 1),
    dualNode('eu-b', 2, { location: 'eu2', internalIP: '10.1.1.2/24' }),
    ...us(),
  ];
  const opts = dual('location');
  const without = planFor(mesh(), 'eu-a', opts);

  test("all of them held by nodes' pod CIDRs, both families: an entry without allowed IPs, valid for wg; the rest unchanged", () => {
    const objects = [...mesh(), peer('grabby', { allowedIPs: ['10.2.81.0/24', 'fd42:81::/64'] })];
    const t = topologyFor(objects, 'eu-a', opts);
    // One conflict per dropped prefix, each naming the Peer, the field and the value (the agent logs each once).
    assert.deepEqual(
      (t.conflicts ?? []).map((e) => `${e.object} ${e.field} ${String(e.value)}`),
      ['Peer "grabby" spec.allowedIPs[0] 10.2.81.0/24', 'Peer "grabby" spec.allowedIPs[1] fd42:81::/64'],
    );
    const plan = planFor(objects, 'eu-a', opts);
    const entry = plan.peers.find((p) => p.names.includes('grabby'))!;
    // Kept as the contract's vectors keep it: routes nothing, and wg takes an entry without AllowedIPs.
    assert.deepEqual(entry.allowedIPs, []);
    const ini = renderIni(nodeConfig(plan));
    assert.ok(!/AllowedIPs = *$/m.test(ini), ini);
    assert.deepEqual(routeLines(plan), routeLines(without));
    assert.deepEqual(
      plan.peers.filter((p) => p.kind === 'segment'),
      without.peers,
    );
  });

  test('a catch-all in either family: the Peer drops whole, named; the mesh as without it', () => {
    for (const bad of ['::/0', '0.0.0.0/0', '0::0/0']) {
      const c = parseCluster([...mesh(), peer('all', { allowedIPs: ['10.5.0.1/32', bad] })]);
      assert.deepEqual(c.peers, []);
      assert.ok(
        c.errors.some((e) => e.object === 'Peer "all"' && e.field === 'spec.allowedIPs[1]'),
        bad,
      );
    }
  });

  test('left with one family: that family alone is routed', () => {
    const objects = [...mesh(), peer('half', { allowedIPs: ['10.5.0.1/32', 'fd42:81::/64'] })];
    const plan = planFor(objects, 'eu-a', opts);
    assert.deepEqual(plan.peers.find((p) => p.names.includes('half'))!.allowedIPs, ['10.5.0.1/32']);
    const lines = routeLines(plan);
    assert.ok(lines.includes('10.5.0.1/32 dev kilo src 10.1.0.1'), lines.join('\n'));
    assert.deepEqual(
      lines.filter((l) => !l.startsWith('10.5.0.1/32')),
      routeLines(without),
    );
  });
});
