/** Conflicts between valid objects (issue 12): the later claimant loses, by the documented order. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { readyMesh } from '../../src/mesh/compute.js';
import { PrefixClaims, resolveConflicts, resolveInOrder } from '../../src/mesh/conflicts.js';
import { parseCluster } from '../../src/model/parse.js';
import { Cidr } from '../../src/net/cidr.js';
import { NOW, kiloNode, kiloPeer, meshOptions, node, peer, planFor, wgKey } from '../helpers/cluster.js';
import { planViolations } from '../fuzz/invariants.js';
import { topologyOf } from '../../src/mesh/compute.js';
import { planNode } from '../../src/mesh/plan.js';
import { random } from '../helpers/random.js';

const n = (name: string, podCIDR: string, internalIP: string, extra = {}) =>
  node(name, { location: name, internalIP, endpoint: '198.51.100.1:51820', podCIDR, ...extra });

function resolve(objects: unknown[]) {
  const r = readyMesh(parseCluster(objects), meshOptions(), NOW);
  return {
    nodes: r.nodes.map((x) => x.name),
    peers: r.peers.map((p) => `${p.name}:${p.allowedIPs.join(',')}`),
    conflicts: r.conflicts.map((e) => e.message),
  };
}

describe('resolveConflicts', () => {
  test('two nodes with one key: the later by name drops out, named with the holder', () => {
    const r = resolve([
      n('b', '10.2.2.0/24', '10.1.0.2/24', { key: wgKey('a') }),
      n('a', '10.2.1.0/24', '10.1.0.1/24'),
    ]);
    assert.deepEqual(r.nodes, ['a']);
    assert.match(r.conflicts[0]!, /^Node "b": field .*kilo\.squat\.ai\/key.*already held by Node "a"/);
  });

  test('overlapping pod CIDRs, a pod CIDR in the WireGuard subnet, one internal IP twice', () => {
    const r = resolve([
      n('a', '10.2.0.0/16', '10.1.0.1/24'),
      n('b', '10.2.1.0/24', '10.1.0.2/24'),
      n('c', '10.4.3.0/24', '10.1.0.3/24'),
      n('d', '10.2.9.0/24', '10.1.0.1/24'),
      n('e', '10.7.0.0/24', '10.1.0.5/24'),
    ]);
    assert.deepEqual(r.nodes, ['a', 'e']);
    assert.equal(r.conflicts.length, 3);
    assert.match(r.conflicts[1]!, /Node "c".*the WireGuard subnet 10\.4\.0\.0\/16/);
  });

  test("a Peer claiming a node's pod CIDR or internal IP loses that allowed IP, keeps the rest", () => {
    const r = resolve([
      n('a', '10.2.1.0/24', '10.1.0.1/24'),
      peer('p', { allowedIPs: ['10.2.0.0/16', '10.1.0.1/32', '10.5.0.1/32'] }),
    ]);
    assert.deepEqual(r.peers, ['p:10.5.0.1/32']);
    assert.equal(r.conflicts.length, 2);
  });

  test('a Peer with a node key drops out; two Peers naming one prefix: the first by name keeps it', () => {
    const r = resolve([
      n('a', '10.2.1.0/24', '10.1.0.1/24'),
      peer('q', { allowedIPs: ['10.5.0.0/24', '10.5.0.2/32'] }),
      peer('p', { allowedIPs: ['10.5.0.0/24'] }),
      peer('r', { allowedIPs: ['10.5.9.0/24'], publicKey: wgKey('a') }),
    ]);
    assert.deepEqual(r.peers, ['p:10.5.0.0/24', 'q:10.5.0.2/32']);
  });

  test('the plans of the issue keep the invariants on every node', () => {
    const objects = [
      n('a', '10.2.1.0/24', '10.1.0.1/24'),
      n('b', '10.2.1.0/24', '10.1.0.2/24'),
      n('c', '10.2.3.0/24', '10.1.0.3/24', { key: wgKey('a') }),
      peer('p', { allowedIPs: ['10.2.1.0/24', '10.1.0.1/32'] }),
    ];
    const cluster = parseCluster(objects);
    for (const host of ['a']) {
      const t = topologyOf(cluster, host, meshOptions({ granularity: 'full' }), NOW);
      assert.deepEqual(planViolations(planNode(t, meshOptions({ granularity: 'full' })), t), []);
    }
    assert.throws(
      () => planFor(objects.slice(0, 2), 'b', { granularity: 'full' }),
      /node "b" was dropped: .*already held by Node "a"/,
    );
  });
});

describe('PrefixClaims', () => {
  test('finds containing, contained and equal prefixes, by family', () => {
    const c = new PrefixClaims();
    c.claim(Cidr.parse('10.2.0.0/16'), 'x');
    c.claim(Cidr.parse('fd00::/64'), 'y');
    assert.equal(c.find(Cidr.parse('10.2.3.0/24')), 'x');
    assert.equal(c.find(Cidr.parse('10.0.0.0/8')), 'x');
    assert.equal(c.find(Cidr.parse('10.2.0.0/16')), 'x');
    assert.equal(c.find(Cidr.parse('10.3.0.0/16')), null);
    assert.equal(c.find(Cidr.parse('fd00::1/128')), 'y');
    assert.equal(c.find(Cidr.parse('fd01::/64')), null);
  });
});

describe('PrefixClaims against a plain scan', () => {
  test('find names the first claimant that overlaps, for every prefix length of both families', () => {
    const claims: [Cidr, string][] = [];
    const c = new PrefixClaims();
    const texts = [
      '10.0.0.0/8',
      '10.2.3.4/32',
      '172.16.0.0/12',
      '192.168.1.0/24',
      '0.0.0.0/1',
      'fd00::/8',
      'fd00:1::5/128',
    ];
    for (const [i, t] of texts.entries()) {
      const cidr = Cidr.parse(t);
      claims.push([cidr, `o${i}`]);
      c.claim(cidr, `o${i}`);
    }
    // The earliest claim among the ancestors (shortest first), else the earliest claim inside.
    const scan = (q: Cidr): string | null => {
      const overlapping = claims.filter(([x]) => x.overlaps(q));
      const containing = overlapping.filter(([x]) => x.prefix <= q.prefix).sort((a, b) => a[0].prefix - b[0].prefix);
      return containing[0]?.[1] ?? overlapping[0]?.[1] ?? null;
    };
    const queries = ['10.2.3.0/24', '10.0.0.0/7', '0.0.0.0/0', '128.0.0.0/1', '172.31.255.255/32', '192.168.0.0/16']
      .concat(['192.168.2.0/24', '11.0.0.0/8', 'fd00:1::/32', 'fc00::/7', 'fe80::/10', '::/0'])
      .concat(['8.8.8.8/32', '10.2.3.4/31']);
    for (const q of queries) assert.equal(c.find(Cidr.parse(q)), scan(Cidr.parse(q)), q);
  });
});

describe('resolveConflicts: the answer without conflicts is the one claim by claim', () => {
  test('1,500 random clusters, conflicting or not, IPv4 and IPv6: the same nodes, Peers and conflicts', () => {
    const next = random(1107);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(next() * xs.length)]!;
    // Few enough addresses that some clusters collide and others do not.
    const pods = [
      '10.2.0.0/24',
      '10.2.1.0/24',
      '10.2.0.0/23',
      '10.3.0.0/24',
      '10.4.9.0/24',
      'fd42::/64',
      'fd42:0:0:1::/64',
    ].concat(Array.from({ length: 40 }, (_, i) => `10.${20 + i}.0.0/24`));
    const internals = ['10.1.0.1/24', '10.1.0.2/24', '10.2.0.9/24', 'fd00::5/64', '10.4.0.9/16'].concat(
      Array.from({ length: 40 }, (_, i) => `172.16.${i}.1/24`),
    );
    const peerIPs = ['10.5.0.1/32', '10.5.0.0/24', '10.2.1.0/24', '172.16.3.1/32', 'fd05::1/128', '10.4.0.0/16'].concat(
      Array.from({ length: 30 }, (_, i) => `10.6.${i}.0/24`),
    );
    const fast = (x: number) => next() < x;
    let withConflicts = 0;
    for (let c = 0; c < 1500; c++) {
      const clean = fast(0.3); // mostly distinct values: the path without conflicts
      const nodes = Array.from({ length: 1 + Math.floor(next() * 8) }, (_, i) =>
        kiloNode(`n${Math.floor(next() * 20)}-${i}`, {
          podCIDR: clean ? `10.${20 + i}.0.0/24` : pick(pods),
          internalIP: fast(0.1) ? undefined : clean ? `172.16.${i}.1/24` : pick(internals),
          key: fast(0.05) ? null : wgKey(clean || fast(0.8) ? `k${i}` : pick(['a', 'b'])),
          endpoint: '198.51.100.1:51820',
        }),
      );
      const peers = Array.from({ length: Math.floor(next() * 4) }, (_, i) =>
        kiloPeer(`p${Math.floor(next() * 9)}-${i}`, {
          allowedIPs: clean
            ? [`10.6.${i}.0/24`]
            : Array.from({ length: 1 + Math.floor(next() * 3) }, () => pick(peerIPs)),
          publicKey: wgKey(clean || fast(0.8) ? `pk${i}` : pick(['a', 'k0', 'pk0'])),
        }),
      );
      const subnet = Cidr.parse(pick(['10.4.0.0/16', '10.4.0.0/16', 'fd04::/64']));
      const want = resolveInOrder(nodes, peers, subnet);
      const got = resolveConflicts(nodes, peers, subnet);
      const label = JSON.stringify({ nodes: nodes.map((n) => [n.name, n.podCIDRs.map(String)]), c });
      assert.deepEqual(got.nodes, want.nodes, label);
      assert.equal(got.nodes.length, want.nodes.length);
      got.nodes.forEach((n, i) => assert.equal(n, want.nodes[i], label));
      assert.deepEqual(got.peers, want.peers, label);
      assert.deepEqual(
        got.conflicts.map((e) => e.message),
        want.conflicts.map((e) => e.message),
        label,
      );
      if (want.conflicts.length > 0) withConflicts++;
    }
    // Both paths were taken often.
    assert.ok(withConflicts > 300 && withConflicts < 1200, `${withConflicts} of 1500 with conflicts`);
  });
});
