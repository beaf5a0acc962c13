import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { topologyOf } from '../../src/mesh/compute.js';
import { TopologyError } from '../../src/mesh/topology.js';
import { parseCluster } from '../../src/model/parse.js';
import { granularities, type Granularity } from '../../src/model/types.js';
import type { KubeObject } from '../../src/model/parse.js';
import { Cidr } from '../../src/net/cidr.js';
import {
  meshOptions,
  node,
  NOW,
  peer,
  planFor,
  routeLines,
  topologyFor,
  wgKey,
  type NodeSpec,
} from '../helpers/cluster.js';

let podIndex = 0;
/** A ready node in `location` with a private endpoint unless given; a fresh pod CIDR each. */
function n(name: string, spec: NodeSpec = {}): KubeObject {
  const i = ++podIndex;
  return node(name, {
    location: 'eu',
    internalIP: `10.1.${i}.1/24`,
    endpoint: `10.1.${i}.1:51820`,
    podCIDR: `10.2.${i}.0/24`,
    ...spec,
  });
}

const leaderOf = (objects: KubeObject[], location = 'eu') => {
  const t = topologyFor(objects, objects[0]!.metadata!.name!);
  return t.segments.find((s) => s.key === `location:${location}`)!.leader.name;
};

describe('leader election (location granularity)', () => {
  test('annotated with a public endpoint beats annotated and public', () => {
    assert.equal(
      leaderOf([
        n('a', { leader: true }),
        n('b', { endpoint: '198.51.100.2:51820' }),
        n('c', { leader: true, endpoint: '198.51.100.3:51820' }),
      ]),
      'c',
    );
  });

  test('annotated beats public', () => {
    assert.equal(leaderOf([n('a', { endpoint: '198.51.100.1:51820' }), n('b', { leader: 'false' })]), 'b');
  });

  test('first annotated by name when none is public', () => {
    assert.equal(leaderOf([n('c', { leader: true }), n('a'), n('b', { leader: true })]), 'b');
  });

  test('public beats first by name', () => {
    assert.equal(leaderOf([n('a'), n('b', { endpoint: '198.51.100.2:51820' })]), 'b');
  });

  test('first by name, whatever the input order', () => {
    assert.equal(leaderOf([n('c'), n('b'), n('a')]), 'a');
  });

  test('a DNS endpoint counts as not public', () => {
    assert.equal(leaderOf([n('a'), n('b', { endpoint: 'b.example.com:51820' })]), 'a');
    assert.equal(
      leaderOf([
        n('a', { leader: true, endpoint: 'a.example.com:51820' }),
        n('b', { leader: true, endpoint: '198.51.100.2:51820' }),
      ]),
      'b',
    );
    assert.equal(
      leaderOf([n('a', { endpoint: 'a.example.com:51820' }), n('b'), n('c', { endpoint: '198.51.100.3:51820' })]),
      'c',
    );
  });

  const boundaries: Array<[string, boolean]> = [
    ['172.15.255.255', true],
    ['172.16.0.0', false],
    ['172.31.255.255', false],
    ['172.32.0.0', true],
    ['9.255.255.255', true],
    ['10.255.255.255', false],
    ['11.0.0.0', true],
    ['192.167.255.255', true],
    ['192.168.0.1', false],
    ['192.169.0.0', true],
  ];
  for (const [ip, isPublic] of boundaries) {
    test(`${ip} is ${isPublic ? 'public' : 'private'}`, () => {
      // "a" is private and first by name: "b" leads only when its endpoint counts as public.
      assert.equal(leaderOf([n('a'), n('b', { endpoint: `${ip}:51820` })]), isPublic ? 'b' : 'a');
    });
  }

  test('fd00::/16 is private, other IPv6 is public', () => {
    assert.equal(leaderOf([n('a'), n('b', { endpoint: '[fd00:1::2]:51820' })]), 'a');
    assert.equal(leaderOf([n('a'), n('b', { endpoint: '[2001:db8::2]:51820' })]), 'b');
  });

  test('a node that is not ready cannot lead', () => {
    const t = topologyFor([n('a'), n('b', { leader: true, endpoint: '198.51.100.2:51820', lastSeen: NOW - 61 })], 'a');
    assert.equal(t.segments[0]!.leader.name, 'a');
    assert.deepEqual(
      t.segments[0]!.nodes.map((x) => x.name),
      ['a'],
    );
  });

  test('each location elects its own leader', () => {
    const t = topologyFor(
      [
        n('a', { location: 'x' }),
        n('b', { location: 'x', leader: true }),
        n('c', { location: 'y' }),
        n('d', { location: 'y', endpoint: '198.51.100.4:51820' }),
      ],
      'a',
    );
    assert.deepEqual(
      t.segments.map((s) => [s.key, s.leader.name]),
      [
        ['location:x', 'b'],
        ['location:y', 'd'],
      ],
    );
    assert.equal(t.local.leader, false);
  });
});

describe('WireGuard IP allocation', () => {
  test('location:… segments before node:… segments, each in string order', () => {
    // "0-alone" sorts first by name, but a node:… key comes after every location:… key.
    const t = topologyFor(
      [
        n('z', { location: 'b' }),
        n('0-alone', { location: 'a', internalIP: '' }),
        n('m', { location: 'a' }),
        n('y', { location: 'a' }),
      ],
      'z',
    );
    assert.deepEqual(
      t.segments.map((s) => `${s.key}=${s.wireGuardIPs.join()}`),
      ['location:a=10.4.0.1', 'location:b=10.4.0.2', 'node:0-alone=10.4.0.3'],
    );
  });

  test('full: nodes in string order, not natural order', () => {
    const t = topologyFor([n('n2'), n('n10'), n('n1')], 'n2', { granularity: 'full' });
    assert.deepEqual(
      t.segments.map((s) => `${s.key}=${s.wireGuardIPs.join()}`),
      ['node:n1=10.4.0.1', 'node:n10=10.4.0.2', 'node:n2=10.4.0.3'],
    );
  });

  test('the interface address carries the mesh mask', () => {
    const objs = [n('a', { location: 'x' }), n('b', { location: 'y' })];
    assert.equal(planFor(objs, 'a').wireGuardIP, '10.4.0.1/16');
    assert.equal(planFor(objs, 'b', { subnet: Cidr.parse('10.10.8.0/24') }).wireGuardIP, '10.10.8.2/24');
  });

  test('a subnet too small for the segments is an error naming the subnet', () => {
    const objs = [n('a', { location: 'x' }), n('b', { location: 'y' }), n('c', { location: 'z' })];
    const subnet = Cidr.parse('10.4.0.0/30');
    assert.equal(topologyFor(objs.slice(0, 2), 'a', { subnet }).segments[1]!.wireGuardIPs.join(), '10.4.0.2');
    assert.throws(
      () => topologyFor(objs, 'a', { subnet }),
      (e: unknown) => e instanceof TopologyError && e.message.includes('10.4.0.0/30'),
    );
  });
});

describe('segment allowed IPs', () => {
  test('pod CIDRs and internal IPs of every member, the WireGuard IP, the allowed-location IPs', () => {
    const objs = [
      node('a', { location: 'eu', internalIP: '10.1.0.1/24', endpoint: '10.1.0.1:51820', podCIDR: '10.2.0.0/24' }),
      node('b', {
        location: 'eu',
        internalIP: '10.1.0.2/24',
        endpoint: '10.1.0.2:51820',
        podCIDR: '10.2.1.0/24',
        allowedLocationIPs: '192.168.50.0/24',
      }),
      node('c', { location: 'us', internalIP: '10.9.0.1/24', endpoint: '198.51.100.9:51820', podCIDR: '10.2.9.0/24' }),
    ];
    const t = topologyFor(objs, 'c');
    const eu = t.segments.find((s) => s.key === 'location:eu')!;
    assert.deepEqual(
      eu.allowedIPs.map((c) => c.networkText),
      ['10.2.0.0/24', '10.1.0.1/32', '10.2.1.0/24', '10.1.0.2/32', '10.4.0.1/32', '192.168.50.0/24'],
    );
    assert.deepEqual(eu.allowedLocationIPs.map(String), ['192.168.50.0/24']);
  });

  test('a node without an internal IP adds no /32', () => {
    const t = topologyFor([n('a', { location: 'x', internalIP: '', podCIDR: '10.2.77.0/24' })], 'a');
    assert.deepEqual(
      t.segments[0]!.allowedIPs.map((c) => c.networkText),
      ['10.2.77.0/24', '10.4.0.1/32'],
    );
  });
});

describe('allowed-location IP filtering', () => {
  const eu = (name: string, alips: string, spec: NodeSpec = {}) =>
    n(name, { location: 'eu', allowedLocationIPs: alips, ...spec });
  const us = (name: string, alips: string, spec: NodeSpec = {}) =>
    n(name, { location: 'us', allowedLocationIPs: alips, ...spec });
  const kept = (objs: KubeObject[], key: string, granularity: 'location' | 'cross' = 'location') =>
    topologyFor(objs, objs[0]!.metadata!.name!, { granularity })
      .segments.find((s) => s.key === key)!
      .allowedLocationIPs.map(String);

  test('an allowed-location IP overlapping a pod CIDR is dropped', () => {
    assert.deepEqual(kept([eu('a', '10.2.0.0/16,192.168.50.0/24'), us('b', '')], 'location:eu'), ['192.168.50.0/24']);
  });

  test('an allowed-location IP overlapping an internal IP is dropped', () => {
    assert.deepEqual(kept([eu('a', '10.1.0.0/16,192.168.50.0/24'), us('b', '')], 'location:eu'), ['192.168.50.0/24']);
  });

  test('an allowed-location IP overlapping the WireGuard subnet is dropped', () => {
    assert.deepEqual(kept([eu('a', '10.4.0.0/24,192.168.50.0/24'), us('b', '')], 'location:eu'), ['192.168.50.0/24']);
  });

  test('an allowed-location IP overlapping a Peer is dropped', () => {
    const objs = [
      eu('a', '192.168.50.0/24,192.168.60.0/24'),
      us('b', ''),
      peer('p', { allowedIPs: ['192.168.60.7/32'] }),
    ];
    assert.deepEqual(kept(objs, 'location:eu'), ['192.168.50.0/24']);
  });

  test('overlapping claims of two locations: the later location keeps its prefix, as in Kilo', () => {
    const objs = [eu('a', '192.168.50.0/24,192.168.70.0/24'), us('b', '192.168.0.0/16,172.20.0.0/24')];
    assert.deepEqual(kept(objs, 'location:eu'), []);
    assert.deepEqual(kept(objs, 'location:us'), ['192.168.0.0/16', '172.20.0.0/24']);
    // The same on every node: the result depends on segment order, not on who computes it.
    assert.deepEqual(kept([objs[1]!, objs[0]!], 'location:us'), ['192.168.0.0/16', '172.20.0.0/24']);
  });

  test('a chain of claims: each dropped for a later one that overlaps it, so only the last stands', () => {
    const objs = [
      n('a', { location: 'l1', allowedLocationIPs: '192.168.1.0/24' }),
      n('b', { location: 'l2', allowedLocationIPs: '192.168.0.0/16' }),
      n('c', { location: 'l3', allowedLocationIPs: '192.168.2.0/24' }),
      n('d', { location: 'l4', allowedLocationIPs: '192.168.1.0/24,10.99.0.0/16' }),
    ];
    const t = topologyFor(objs, 'a', { granularity: 'location' });
    assert.deepEqual(
      t.segments.map((s) => [s.key, s.allowedLocationIPs.map(String)]),
      [
        ['location:l1', []],
        ['location:l2', []],
        ['location:l3', ['192.168.2.0/24']],
        ['location:l4', ['192.168.1.0/24', '10.99.0.0/16']],
      ],
    );
  });

  test('two nodes of one location naming the same prefix: kept once', () => {
    assert.deepEqual(kept([eu('a', '192.168.50.0/24'), eu('b', '192.168.50.0/24'), us('c', '')], 'location:eu'), [
      '192.168.50.0/24',
    ]);
  });

  test('cross: two nodes of one location naming the same prefix → the later segment alone carries it, as in Kilo', () => {
    const objs = [eu('a', '192.168.50.0/24'), eu('b', '192.168.50.0/24,192.168.51.0/24'), us('c', '')];
    const plan = planFor(objs, 'c', { granularity: 'cross' });
    const carriers = (prefix: string) =>
      plan.peers.filter((p) => p.allowedIPs.includes(prefix)).map((p) => p.names.join());
    assert.deepEqual(carriers('192.168.50.0/24'), ['b']);
    assert.deepEqual(carriers('192.168.51.0/24'), ['b']);
    const routes = plan.routes.filter((r) => r.dst === '192.168.50.0/24');
    assert.equal(routes.length, 1);
    assert.equal(
      routes[0]!.gw,
      topologyFor(objs, 'c', { granularity: 'cross' })
        .segments.find((s) => s.key === 'node:b')!
        .wireGuardIPs.join(),
    );
  });

  test('10,000 segments with one allowed-location IP each are filtered as a scan would filter them', () => {
    const objs = Array.from({ length: 10_000 }, (_, i) =>
      node(`n${String(i).padStart(5, '0')}`, {
        endpoint: `198.18.${Math.floor(i / 256)}.${i % 256}:51820`,
        location: `l${i}`,
        // Every tenth claims a /16 that swallows the /24s of the nine before it; the rest a /24.
        allowedLocationIPs:
          i % 10 === 9 ? `172.${16 + Math.floor(i / 2560)}.0.0/16` : `172.${16 + Math.floor(i / 2560)}.${i % 256}.0/24`,
        podCIDR: `10.${100 + Math.floor(i / 256)}.${i % 256}.0/24`,
        internalIP: `10.1.${Math.floor(i / 256)}.${i % 256}/16`,
      }),
    );
    const t = topologyFor(objs, 'n00000', { granularity: 'location' });
    const claims = t.segments.map((s) => s.nodes[0]!.allowedLocationIPs);
    // The quadratic definition, on a sample of segments.
    for (let i = 0; i < t.segments.length; i += 97) {
      const expected = claims[i]!.filter((c) => !claims.slice(i + 1).some((later) => later.some((o) => o.overlaps(c))));
      assert.deepEqual(t.segments[i]!.allowedLocationIPs.map(String), expected.map(String), t.segments[i]!.key);
    }
    const standing = t.segments.reduce((k, s) => k + s.allowedLocationIPs.length, 0);
    assert.ok(standing > 0 && standing < 10_000, `${standing} prefixes stand`);
  });
});

describe('Peer allowed IPs', () => {
  test('when two Peers claim the same allowed IP, the first by name keeps it', () => {
    const objs = [
      n('a', { location: 'x' }),
      peer('p-b', { allowedIPs: ['10.5.0.0/24', '10.6.0.0/24'] }),
      peer('p-a', { allowedIPs: ['10.5.0.0/24', '10.7.0.1/32'] }),
    ];
    const t = topologyFor(objs, 'a');
    assert.deepEqual(
      t.peers.map((p) => [p.name, p.allowedIPs.map(String)]),
      [
        ['p-a', ['10.5.0.0/24', '10.7.0.1/32']],
        ['p-b', ['10.6.0.0/24']],
      ],
    );
    const routes = planFor(objs, 'a').routes.filter((r) => r.dst === '10.5.0.0/24');
    assert.equal(routes.length, 1, 'one route per claimed prefix');
  });

  test('an invalid Peer does not claim anything', () => {
    const cluster = parseCluster([
      n('a', { location: 'x' }),
      peer('p-a', { allowedIPs: ['10.5.0.0/24'], publicKey: 'bad' }),
      peer('p-b', { allowedIPs: ['10.5.0.0/24'] }),
    ]);
    assert.equal(cluster.errors.length, 1);
    const t = topologyOf(cluster, 'a', meshOptions(), NOW);
    assert.deepEqual(
      t.peers.map((p) => [p.name, p.allowedIPs.map(String)]),
      [['p-b', ['10.5.0.0/24']]],
    );
  });
});

describe('endpoints behind NAT', () => {
  const roamerKey = wgKey('r');
  const peerKey = wgKey('p');
  const seen = (ip: string, port: number) => ({
    [roamerKey]: { IP: ip, Port: port },
    [peerKey]: { IP: ip, Port: port + 1 },
  });
  const cluster = (rKeepalive: number) => [
    node('r', {
      location: 'r',
      internalIP: '10.9.0.1/24',
      endpoint: '198.51.100.9:51820',
      podCIDR: '10.2.9.0/24',
      keepalive: rKeepalive,
    }),
    // Segment order is location order ("l1" < "l2"), the opposite of name order ("z" > "m").
    node('z', {
      location: 'l1',
      internalIP: '10.1.0.1/24',
      endpoint: '198.51.100.1:51820',
      podCIDR: '10.2.1.0/24',
      discovered: seen('203.0.113.1', 1000),
    }),
    node('m', {
      location: 'l2',
      internalIP: '10.1.1.1/24',
      endpoint: '198.51.100.2:51820',
      podCIDR: '10.2.2.0/24',
      discovered: seen('203.0.113.2', 2000),
    }),
    node('q', {
      location: 'l3',
      internalIP: '10.1.3.1/24',
      endpoint: '198.51.100.3:51820',
      podCIDR: '10.2.3.0/24',
      keepalive: 7,
    }),
    peer('p', {
      allowedIPs: ['10.5.0.1/32'],
      publicKey: peerKey,
      endpoint: '198.51.100.50:51820',
      keepalive: rKeepalive,
    }),
  ];
  const endpointOf = (objs: KubeObject[], host: string, key: string) =>
    planFor(objs, host).peers.find((p) => p.publicKey === key)!.endpoint;

  test('a keepalive target is dialled where the local node saw it', () => {
    assert.equal(endpointOf(cluster(25), 'm', roamerKey), '203.0.113.2:2000');
    assert.equal(endpointOf(cluster(25), 'z', roamerKey), '203.0.113.1:1000');
    assert.equal(endpointOf(cluster(25), 'm', peerKey), '203.0.113.2:2001');
  });

  test('otherwise where another node saw it, in segment order', () => {
    assert.equal(endpointOf(cluster(25), 'q', roamerKey), '203.0.113.1:1000');
    assert.equal(endpointOf(cluster(25), 'q', peerKey), '203.0.113.1:1001');
  });

  test('a target without keepalive is dialled at its annotated endpoint', () => {
    assert.equal(endpointOf(cluster(0), 'm', roamerKey), '198.51.100.9:51820');
    assert.equal(endpointOf(cluster(0), 'q', peerKey), '198.51.100.50:51820');
  });

  test('a keepalive target nobody has seen is dialled at its annotated endpoint', () => {
    const objs = cluster(25).filter((o) => o.metadata!.name !== 'z' && o.metadata!.name !== 'm');
    assert.equal(endpointOf(objs, 'q', roamerKey), '198.51.100.9:51820');
  });

  test("every WireGuard peer gets the local node's keepalive, not the target's", () => {
    assert.deepEqual(
      planFor(cluster(25), 'q').peers.map((p) => p.persistentKeepalive),
      [7, 7, 7, 7],
    );
    assert.deepEqual(
      planFor(cluster(25), 'm').peers.map((p) => p.persistentKeepalive),
      [0, 0, 0, 0],
    );
  });
});

describe('two nodes behind one NAT (no hairpin assumed)', () => {
  // n1 and n2 share 192.168.2.0/24 behind a gateway whose public side is 198.51.100.1; pub, on the
  // internet, saw each at that gateway's address (and published it).
  const gw = (port: number) => ({ IP: '198.51.100.1', Port: port });
  const cluster = (n2Location: string) => [
    node('n1', {
      location: 'office',
      internalIP: '192.168.2.11/24',
      endpoint: '192.168.2.11:51820',
      podCIDR: '10.2.1.0/24',
      keepalive: 5,
    }),
    node('n2', {
      location: n2Location,
      internalIP: '192.168.2.12/24',
      endpoint: '192.168.2.12:51820',
      podCIDR: '10.2.2.0/24',
      keepalive: 5,
    }),
    node('pub', {
      location: 'cloud',
      internalIP: '10.1.0.1/24',
      endpoint: '203.0.113.1:51820',
      podCIDR: '10.2.3.0/24',
      discovered: { [wgKey('n1')]: gw(40001), [wgKey('n2')]: gw(40002) },
    }),
  ];
  const endpointOf = (objs: KubeObject[], host: string, target: string, granularity: Granularity) =>
    planFor(objs, host, { granularity }).peers.find((p) => p.publicKey === wgKey(target))?.endpoint;

  test('full, one location: mates dial each other on the LAN, everyone else at the gateway', () => {
    assert.equal(endpointOf(cluster('office'), 'n1', 'n2', 'full'), '192.168.2.12:51820');
    assert.equal(endpointOf(cluster('office'), 'n2', 'n1', 'full'), '192.168.2.11:51820');
    assert.equal(endpointOf(cluster('office'), 'pub', 'n1', 'full'), '198.51.100.1:40001');
  });

  test("full, one location: no route sends the mate's internal IP into the tunnel that reaches it", () => {
    const routes = routeLines(planFor(cluster('office'), 'n1', { granularity: 'full' }));
    assert.ok(!routes.some((r) => r.startsWith('192.168.2.12/32')), routes.join('\n'));
  });

  test("the local node's own WireGuard has the last word (it saw the mate there: a gateway that hairpins)", () => {
    const objs = cluster('office');
    objs[0] = node('n1', {
      location: 'office',
      internalIP: '192.168.2.11/24',
      endpoint: '192.168.2.11:51820',
      podCIDR: '10.2.1.0/24',
      keepalive: 5,
      discovered: { [wgKey('n2')]: gw(40002) },
    });
    assert.equal(endpointOf(objs, 'n1', 'n2', 'full'), '198.51.100.1:40002');
  });

  for (const granularity of ['location', 'full', 'cross'] as const) {
    test(`${granularity}, different locations: the discovered endpoint (one private subnet is no proof of one LAN)`, () => {
      assert.equal(endpointOf(cluster('home'), 'n1', 'n2', granularity), '198.51.100.1:40002');
    });
  }
});

/** A seeded shuffle: the test is the same every run, yet the input order is scrambled. */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let s = seed;
  for (let i = out.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

describe('stable ordering', () => {
  const objs: KubeObject[] = [
    node('eu-1', {
      location: 'eu',
      internalIP: '10.1.0.1/24',
      endpoint: '198.51.100.1:51820',
      podCIDR: '10.2.1.0/24',
      allowedLocationIPs: '192.168.50.0/24',
    }),
    node('eu-2', {
      location: 'eu',
      internalIP: '10.1.0.2/24',
      endpoint: '10.1.0.2:51820',
      podCIDR: '10.2.2.0/24',
      leader: true,
    }),
    node('eu-3', {
      location: 'eu',
      internalIP: '10.1.1.3/24',
      endpoint: '10.1.1.3:51820',
      podCIDR: '10.2.3.0/24',
      allowedLocationIPs: '192.168.50.0/24',
    }),
    node('us-1', {
      location: 'us',
      internalIP: '10.8.0.1/24',
      endpoint: '198.51.100.8:51820',
      podCIDR: '10.2.8.0/24',
      keepalive: 10,
    }),
    node('us-2', {
      location: 'us',
      internalIP: '10.8.0.2/24',
      endpoint: '198.51.100.9:51820',
      podCIDR: '10.2.9.0/24',
      discovered: { [wgKey('office')]: { IP: '203.0.113.4', Port: 4000 } },
    }),
    node('office', {
      location: 'office',
      forceInternalIP: '-',
      endpoint: '203.0.113.3:51820',
      podCIDR: '10.2.20.0/24',
      keepalive: 25,
    }),
    peer('laptop', { allowedIPs: ['10.5.0.1/32', '10.5.0.2/32'] }),
    peer('phone', { allowedIPs: ['10.5.0.2/32', '10.5.0.3/32'], endpoint: '198.51.100.77:51820' }),
  ];
  for (const granularity of granularities) {
    test(`${granularity}: shuffled input gives identical plans on every node`, () => {
      for (const host of ['eu-1', 'eu-2', 'eu-3', 'us-1', 'us-2', 'office']) {
        const want = JSON.stringify(planFor(objs, host, { granularity }));
        for (const seed of [1, 2, 3, 4, 5]) {
          assert.equal(
            JSON.stringify(planFor(shuffled(objs, seed), host, { granularity })),
            want,
            `${host} seed ${seed}`,
          );
        }
      }
    });
  }
});

describe('the local node', () => {
  test('a rejected local node is an error that carries the validation message', () => {
    const cluster = parseCluster([n('a', { internalIP: 'bogus' }), n('b')]);
    assert.throws(
      () => topologyOf(cluster, 'a', meshOptions(), NOW),
      (e: unknown) => e instanceof TopologyError && e.message.includes('"bogus"') && e.message.includes('internal-ip'),
    );
  });

  test('a missing local node is an error naming it', () => {
    assert.throws(() => topologyFor([n('a')], 'ghost'), /"ghost" not found/);
  });

  for (const [what, spec] of [
    ['no endpoint', { endpoint: undefined }],
    ['no key', { key: null }],
    ['no pod CIDR', { podCIDR: undefined }],
    ['a stale last-seen', { lastSeen: NOW - 61 }],
  ] as const) {
    test(`a local node with ${what} is not ready, and the error says why`, () => {
      const base: NodeSpec = {
        location: 'eu',
        internalIP: '10.1.0.1/24',
        endpoint: '10.1.0.1:51820',
        podCIDR: '10.2.0.0/24',
      };
      const objs = [node('a', { ...base, ...(spec as NodeSpec) }), n('b')];
      assert.throws(
        () => topologyFor(objs, 'a'),
        (e: unknown) => e instanceof TopologyError && /not ready: /.test(e.message),
      );
    });
  }

  test('nodes that are not ready take no part: no segment, no WireGuard IP, no peer', () => {
    const objs = [
      n('a', { location: 'x' }),
      n('b', { location: 'y', lastSeen: NOW - 61 }),
      n('c', { location: 'z', key: null }),
    ];
    const t = topologyFor(objs, 'a');
    assert.deepEqual(
      t.segments.map((s) => s.key),
      ['location:x'],
    );
    assert.deepEqual(planFor(objs, 'a').peers, []);
  });
});

test('a Peer reusing a node key or an earlier Peer key is left out (one WireGuard peer per key)', async () => {
  const { uniqueKeys } = await import('../../src/mesh/topology.js');
  const { kiloNode, kiloPeer } = await import('../helpers/cluster.js');
  const n = kiloNode('a', { location: 'x', key: wgKey('node-a') });
  const p1 = kiloPeer('p1', { publicKey: wgKey('shared'), allowedIPs: ['10.5.0.1/32'] });
  const p2 = kiloPeer('p2', { publicKey: wgKey('shared'), allowedIPs: ['10.5.0.2/32'] });
  const p3 = kiloPeer('p3', { publicKey: wgKey('node-a'), allowedIPs: ['10.5.0.3/32'] });
  assert.deepEqual(
    uniqueKeys([p1, p2, p3], [n]).map((p) => p.name),
    ['p1'],
  );
});
