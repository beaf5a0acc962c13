import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Annotation } from '../../src/model/annotations.js';
import { parseCluster, parseNode, type KubeObject } from '../../src/model/parse.js';
import { endpointFor } from '../../src/mesh/endpoint-family.js';
import { peerConfig } from '../../src/cli/showconf-conf.js';
import { Cidr, IP } from '../../src/net/cidr.js';
import type { MeshOptions } from '../../src/mesh/options.js';
import { TopologyError } from '../../src/mesh/topology.js';
import { readyMesh } from '../../src/mesh/compute.js';
import {
  kiloNode,
  node,
  NOW,
  peer,
  planFor,
  routeLines,
  topologyFor,
  wgKey,
  type NodeSpec,
} from '../helpers/cluster.js';

const subnets = [Cidr.parse('10.4.0.0/16'), Cidr.parse('fd4b::/64')];
const dual = (granularity: MeshOptions['granularity']): Partial<MeshOptions> => ({
  granularity,
  subnet: subnets[0]!,
  subnets,
});

interface DualSpec {
  location: string;
  /** Last byte of every address. */
  n: number;
  /** Which underlays the node has: both, IPv4 only or IPv6 only. */
  underlay?: 4 | 6 | 'dual';
  pods6?: string;
  keepalive?: number;
}

/** A node of a dual-stack cluster: pod CIDRs of both families, internal IPs and endpoints per its underlay. */
function dualNode(name: string, s: DualSpec, extra: NodeSpec = {}): KubeObject {
  const u = s.underlay ?? 'dual';
  const lan = s.location === 'eu' ? 1 : 8;
  const annotations: Record<string, string> = {};
  if (u === 'dual') {
    annotations[Annotation.internalIPv6] = `fd10:${lan}::${s.n}/64`;
    annotations[Annotation.endpointIPv6] = `[2001:db8:${lan}::${s.n}]:51820`;
  }
  return node(name, {
    location: s.location,
    internalIP: u === 6 ? `fd10:${lan}::${s.n}/64` : `10.${lan}.0.${s.n}/24`,
    endpoint: u === 6 ? `[2001:db8:${lan}::${s.n}]:51820` : `198.51.100.${lan * 10 + s.n}:51820`,
    podCIDRs: [`10.2.${lan * 10 + s.n}.0/24`, s.pods6 ?? `fd42:${lan * 10 + s.n}::/64`],
    ...(s.keepalive ? { keepalive: s.keepalive } : {}),
    ...extra,
    annotations: { ...annotations, ...(extra.annotations ?? {}) },
  });
}

/** eu: a-dual, b-dual; us: a-dual, b-IPv6 only (its IPv4 pods still reached through the tunnel). */
const cluster = () => [
  dualNode('eu-a', { location: 'eu', n: 1 }),
  dualNode('eu-b', { location: 'eu', n: 2 }),
  dualNode('us-a', { location: 'us', n: 1 }),
  dualNode('us-b', { location: 'us', n: 2, underlay: 6 }),
];

describe('the model: a dual-stack node', () => {
  test("Kilo's annotations keep the IPv4 values, the -ipv6 ones add the IPv6 ones", () => {
    const n = kiloNode('eu-a', {
      internalIP: '10.1.0.1/24',
      endpoint: '198.51.100.1:51820',
      podCIDRs: ['10.2.1.0/24', 'fd42:1::/64'],
      annotations: {
        [Annotation.internalIPv6]: 'fd10:1::1/64',
        [Annotation.endpointIPv6]: '[2001:db8::1]:51820',
        [Annotation.discoveredEndpointsIPv6]: JSON.stringify({
          [wgKey('x')]: { IP: '2001:db8::9', Port: 4, Zone: '' },
        }),
      },
    });
    assert.deepEqual(n.internalIPs.map(String), ['10.1.0.1/24', 'fd10:1::1/64']);
    assert.deepEqual(n.podCIDRs.map(String), ['10.2.1.0/24', 'fd42:1::/64']);
    assert.equal(n.endpoint?.ip?.text, '198.51.100.1');
    assert.equal(n.ipv6Endpoint?.ip?.text, '2001:db8::1');
    assert.equal(n.discoveredEndpoints.get(wgKey('x'))?.ip?.text, '2001:db8::9');
  });

  test('force-internal-ip "-" holds for both families unless force-internal-ip-ipv6 gives one', () => {
    const base = { annotations: { [Annotation.internalIPv6]: 'fd10::1/64' } };
    assert.deepEqual(kiloNode('a', { ...base, forceInternalIP: '-' }).internalIPs, []);
    const forced = kiloNode('a', {
      forceInternalIP: '-',
      annotations: { ...base.annotations, [Annotation.forceInternalIPv6]: 'fd10::7/64' },
    });
    assert.deepEqual(forced.internalIPs.map(String), ['fd10::7/64']);
    // Forcing the IPv4 one keeps the detected IPv6 one.
    assert.deepEqual(kiloNode('a', { ...base, forceInternalIP: '10.0.0.5/24' }).internalIPs.map(String), [
      '10.0.0.5/24',
      'fd10::1/64',
    ]);
  });

  const rejected = (spec: NodeSpec) => {
    const p = parseNode(node('bad', spec));
    assert.ok(!p.ok, 'the node is dropped');
    return p.errors.map((e) => e.message).join('\n');
  };

  /** The one error names the node, the field and the value, and says why. */
  const names = (spec: NodeSpec, field: string, value: string, why: RegExp) => {
    const text = rejected(spec);
    for (const part of ['Node "bad"', field, JSON.stringify(value)])
      assert.ok(text.includes(part), `${part} in ${text}`);
    assert.match(text, why);
  };

  test('bad input: one clear error naming node, field and value; the rest of the cluster stays', () => {
    names({ podCIDRs: ['10.2.1.0/24', '10.2.2.0/24'] }, 'spec.podCIDRs[1]', '10.2.2.0/24', /one per family/);
    const v4 = { internalIP: '10.1.0.1/24', endpoint: '198.51.100.1:1' };
    names(
      { ...v4, annotations: { [Annotation.internalIPv6]: '10.1.0.9/24' } },
      Annotation.internalIPv6,
      '10.1.0.9/24',
      /IPv6/,
    );
    names(
      { endpoint: '[2001:db8::1]:51820', annotations: { [Annotation.endpointIPv6]: '[2001:db8::2]:51820' } },
      Annotation.endpointIPv6,
      '[2001:db8::2]:51820',
      /second IPv6 endpoint/,
    );
    names(
      { ...v4, annotations: { [Annotation.endpointIPv6]: '1.2.3.4:5' } },
      Annotation.endpointIPv6,
      '1.2.3.4:5',
      /not an IPv6 endpoint/,
    );
    names({ internalIP: '169.254.3.4/16' }, Annotation.internalIP, '169.254.3.4/16', /link-local/);
    names(
      { ...v4, annotations: { [Annotation.internalIPv6]: 'fe80::1/64' } },
      Annotation.internalIPv6,
      'fe80::1/64',
      /link-local/,
    );
    names({ endpoint: '[fe80::1]:51820' }, Annotation.endpoint, '[fe80::1]:51820', /link-local/);
    // The operator's -ipv6 annotations and the discovered IPv6 endpoints: IPv6 only.
    names(
      { ...v4, annotations: { [Annotation.forceInternalIPv6]: '10.1.0.9/24' } },
      Annotation.forceInternalIPv6,
      '10.1.0.9/24',
      /not an IPv6 address/,
    );
    names(
      { ...v4, annotations: { [Annotation.forceEndpointIPv6]: '198.51.100.9:51820' } },
      Annotation.forceEndpointIPv6,
      '198.51.100.9:51820',
      /not an IPv6 endpoint/,
    );
    names(
      {
        ...v4,
        annotations: {
          [Annotation.discoveredEndpointsIPv6]: JSON.stringify({ [wgKey('x')]: { IP: '192.0.2.1', Port: 4 } }),
        },
      },
      Annotation.discoveredEndpointsIPv6,
      '192.0.2.1',
      /not an IPv6 endpoint/,
    );
    names(
      { ...v4, annotations: { [Annotation.wireGuardIPv6]: '10.4.0.1/16' } },
      Annotation.wireGuardIPv6,
      '10.4.0.1/16',
      /not an IPv6 address/,
    );
    // An IPv6 value in Kilo's annotation beside the -ipv6 one: a second of one family.
    names(
      {
        internalIP: 'fd10::1/64',
        endpoint: '198.51.100.1:1',
        annotations: { [Annotation.internalIPv6]: 'fd10::2/64' },
      },
      Annotation.internalIPv6,
      'fd10::2/64',
      /second IPv6 internal IP/,
    );
    const c = parseCluster([...cluster(), node('bad', { podCIDRs: ['fd42::/64', 'fd43::/64'] })]);
    assert.equal(c.nodes.length, 4);
    assert.equal(c.errors.length, 1);
  });

  test('private: RFC 1918, 100.64.0.0/10 and fc00::/7; link-local apart', () => {
    for (const a of ['10.1.2.3', '172.16.0.1', '192.168.1.1', '100.64.0.1', '100.127.255.255', 'fc00::1', 'fd4b::1'])
      assert.ok(IP.parse(a).isNonPublic(), a);
    for (const a of ['100.63.255.255', '100.128.0.0', '2001:db8::1', 'fe80::1', '198.51.100.1'])
      assert.ok(!IP.parse(a).isNonPublic(), a);
    for (const a of ['169.254.1.1', 'fe80::1', 'febf::1']) assert.ok(IP.parse(a).isLinkLocal(), a);
    assert.ok(!IP.parse('fec0::1').isLinkLocal());
  });
});

describe('the plan of a dual-stack mesh', () => {
  test('one slot, one address in each family: the two WireGuard IPs correspond', () => {
    const t = topologyFor(cluster(), 'eu-a', dual('full'));
    for (const s of t.segments) {
      const [v4, v6] = s.wireGuardIPs;
      assert.equal(v6!.family, 6);
      assert.equal(Number(v4!.text.split('.')[3]), Number.parseInt(v6!.text.split(':').pop()!, 16), s.key);
    }
    const plan = planFor(cluster(), 'eu-a', dual('full'));
    assert.equal(plan.wireGuardIP, '10.4.0.1/16');
    assert.deepEqual(plan.wireGuardIPs, ['10.4.0.1/16', 'fd4b::1/64']);
  });

  test("each peer's allowed IPs carry both families; routes go per family through kilo", () => {
    const plan = planFor(cluster(), 'eu-a', dual('location'));
    const us = plan.peers.find((p) => p.names.includes('us-a'))!;
    for (const ip of ['10.2.81.0/24', 'fd42:81::/64', '10.8.0.1/32', 'fd10:8::1/128', '10.4.0.2/32', 'fd4b::2/128'])
      assert.ok(us.allowedIPs.includes(ip), `${ip} in ${us.allowedIPs.join(' ')}`);
    const lines = routeLines(plan);
    for (const want of [
      '10.2.81.0/24 via 10.4.0.2 dev kilo src 10.1.0.1 onlink',
      'fd42:81::/64 via fd4b::2 dev kilo src fd10:1::1 onlink',
      'fd42:82::/64 via fd4b::2 dev kilo src fd10:1::1 onlink',
    ])
      assert.ok(lines.includes(want), `${want} in\n${lines.join('\n')}`);
  });

  test('a follower sends each family to its leader over the internal IP of that family', () => {
    const lines = routeLines(planFor(cluster(), 'eu-b', dual('location')));
    assert.ok(lines.includes('10.2.81.0/24 via 10.1.0.1 dev tunnel onlink'), lines.join('\n'));
    assert.ok(lines.includes('fd42:81::/64 via fd10:1::1 dev private onlink'), lines.join('\n'));
    assert.ok(lines.includes('fd4b::2/128 via fd10:1::1 dev private onlink'), lines.join('\n'));
  });

  test('a mate on an IPv6-only LAN gets its IPv4 pods through its IPv6 internal IP (via inet6), in every granularity that groups it', () => {
    for (const g of ['location', 'cross', 'subnet'] as const) {
      const v6Only = [
        ...cluster().slice(0, 2),
        dualNode('ap-a', { location: 'ap', n: 1, underlay: 6 }),
        dualNode('ap-b', { location: 'ap', n: 2, underlay: 6 }),
      ];
      // ap's LAN is lan 8 (dualNode): fd10:8::N.
      const leader = routeLines(planFor(v6Only, 'ap-a', { ...dual(g), encapsulate: 'never' }));
      assert.ok(leader.includes('10.2.82.0/24 via fd10:8::2 dev private onlink'), `${g}:\n${leader.join('\n')}`);
      assert.ok(leader.includes('fd42:82::/64 via fd10:8::2 dev private onlink'), `${g}:\n${leader.join('\n')}`);
    }
    // A dual-stack node beside an IPv6-only mate: the same, IPv4 through the mate's IPv6 address.
    const lines = routeLines(planFor(cluster(), 'us-a', dual('cross')));
    assert.ok(lines.includes('10.2.82.0/24 via fd10:8::2 dev private onlink'), lines.join('\n'));
  });

  test('every granularity forms the same groups as with one family (subnet: by the IPv4 internal IP)', () => {
    for (const g of ['location', 'full', 'cross', 'subnet'] as const) {
      const one = topologyFor(cluster(), 'eu-a', { granularity: g });
      const two = topologyFor(cluster(), 'eu-a', dual(g));
      assert.deepEqual(
        two.segments.map((s) => [s.key, s.group]),
        one.segments.map((s) => [s.key, s.group]),
        g,
      );
    }
  });

  test('the endpoint: the first of Kilo, IPv6 both ends can use; both ends agree', () => {
    const t = topologyFor(cluster(), 'eu-a', dual('full'));
    const n = (name: string) => t.segments.find((s) => s.leader.name === name)!.leader;
    const text = (from: string, to: string) => endpointFor(n(from), n(to))?.ip?.text;
    // Two dual-stack nodes: IPv4, as Kilo agents.
    assert.equal(text('eu-a', 'us-a'), '198.51.100.81');
    assert.equal(text('us-a', 'eu-a'), '198.51.100.11');
    // A dual-stack node and an IPv6-only one: IPv6 on both ends.
    assert.equal(text('eu-a', 'us-b'), '2001:db8:8::2');
    assert.equal(text('us-b', 'eu-a'), '2001:db8:1::1');
    const plan = planFor(cluster(), 'us-b', dual('full'));
    assert.equal(plan.peers.find((p) => p.names.includes('eu-a'))!.endpoint, '[2001:db8:1::1]:51820');
  });

  test('an IPv4-only node dials the IPv4 endpoint of a dual-stack one', () => {
    const v4 = kiloNode('v4', { endpoint: '203.0.113.1:51820' });
    const d = kiloNode('d', {
      endpoint: '198.51.100.1:51820',
      annotations: { [Annotation.endpointIPv6]: '[2001:db8::1]:51820' },
    });
    assert.equal(endpointFor(v4, d)?.ip?.text, '198.51.100.1');
    const v6 = kiloNode('v6', { endpoint: '[2001:db8::6]:51820' });
    assert.equal(endpointFor(v6, d)?.ip?.text, '2001:db8::1');
  });

  test('IPv6 pod traffic is masqueraded only from a unique local range', () => {
    const ula = planFor(cluster(), 'eu-a', dual('full')).firewall.masquerade.podCIDRs;
    assert.deepEqual(ula, ['10.2.11.0/24', 'fd42:11::/64']);
    const pub = [dualNode('eu-a', { location: 'eu', n: 1, pods6: '2001:db8:42::/64' }), ...cluster().slice(1)];
    assert.deepEqual(planFor(pub, 'eu-a', dual('full')).firewall.masquerade.podCIDRs, ['10.2.11.0/24']);
  });

  test('every WireGuard IP of both families is a masquerade exception', () => {
    const ex = planFor(cluster(), 'eu-a', dual('full')).firewall.masquerade.exceptions;
    const wg = ex.find((e) => e.reason === 'wireguard-ips')!.destinations;
    assert.ok(wg.some((d) => d.startsWith('10.4.0.')) && wg.some((d) => d.startsWith('fd4b::')), wg.join(' '));
  });

  test('an IPv6 --subnet too small for the segments: a TopologyError naming it', () => {
    const small = [subnets[0]!, Cidr.parse('fd4b::/126')];
    assert.throws(
      () => topologyFor(cluster(), 'eu-a', { granularity: 'full', subnet: small[0]!, subnets: small }),
      (e: Error) => e instanceof TopologyError && /fd4b::\/126.*too few addresses for 4 segments/.test(e.message),
    );
  });

  test('a one-family --subnet plans a dual-stack cluster without IPv6 WireGuard IPs', () => {
    const plan = planFor(cluster(), 'eu-a', { granularity: 'full' });
    assert.ok(!('wireGuardIPs' in plan));
    assert.ok(plan.peers.every((p) => !p.allowedIPs.some((a) => a.startsWith('fd4b:'))));
  });

  test('showconf peer gives a Peer both families, and the endpoint of its own family', () => {
    const objects = [
      ...cluster(),
      peer('laptop6', { allowedIPs: ['10.5.0.1/32', 'fd05::1/128'], endpoint: '[2001:db8:5::1]:51820' }),
    ];
    const conf = peerConfig(topologyFor(objects, 'eu-a', dual('location')), 'laptop6');
    const eu = conf.peers.find((p) => p.comment?.includes('eu'))!;
    for (const ip of ['10.2.11.0/24', 'fd42:11::/64', '10.4.0.1/32', 'fd4b::1/128'])
      assert.ok(eu.allowedIPs.includes(ip), `${ip} in ${eu.allowedIPs.join(' ')}`);
    assert.equal(eu.endpoint, '[2001:db8:1::1]:51820');
    const plan = planFor(objects, 'eu-a', dual('location'));
    assert.deepEqual(plan.peers.find((p) => p.kind === 'peer')!.allowedIPs, ['10.5.0.1/32', 'fd05::1/128']);
  });

  test('IPv6 overlaps are conflicts as IPv4 ones: the later node drops, the mesh stays', () => {
    const drops = (objects: KubeObject[], subnet6 = 'fd4b::/64') => {
      const two = [subnets[0]!, Cidr.parse(subnet6)];
      const { nodes, conflicts } = readyMesh(parseCluster(objects), { subnet: two[0]!, subnets: two }, NOW);
      return { kept: nodes.map((n) => n.name), conflicts: conflicts.map((e) => e.message) };
    };
    assert.deepEqual(drops(cluster()), { kept: ['eu-a', 'eu-b', 'us-a', 'us-b'], conflicts: [] });
    // us-b's IPv6 pods inside eu-a's: a /45 holding fd42:0:c::/64 (a prefix not on a hex digit's edge).
    const nested = [
      dualNode('eu-a', { location: 'eu', n: 1, pods6: 'fd42:0:8::/45' }),
      ...cluster().slice(1, 3),
      dualNode('us-b', { location: 'us', n: 2, pods6: 'fd42:0:c::/64' }),
    ];
    const r = drops(nested);
    assert.deepEqual(r.kept, ['eu-a', 'eu-b', 'us-a']);
    assert.ok(
      r.conflicts.some((m) => m.includes('Node "us-b"') && m.includes('fd42:0:c::/64')),
      r.conflicts.join('\n'),
    );
    // Beside it, just outside the /45: no conflict.
    const beside = [
      nested[0]!,
      ...cluster().slice(1, 3),
      dualNode('us-b', { location: 'us', n: 2, pods6: 'fd42:0:10::/64' }),
    ];
    assert.deepEqual(drops(beside).conflicts, []);
    // An IPv6 pod CIDR inside the IPv6 --subnet.
    const inSubnet = drops(cluster(), 'fd42:81::/56');
    assert.ok(
      inSubnet.conflicts.some((m) => m.includes('fd4') && m.includes('--subnet')),
      inSubnet.conflicts.join('\n'),
    );
  });
});
