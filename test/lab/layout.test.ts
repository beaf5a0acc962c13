import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clusterPlan, initialNodes, labNode, natOf } from '../../packages/lab/src/layout.js';
import { Cidr, IP } from '../../src/net/cidr.js';

test("the lab's addresses are classified as intended by host discovery: LANs private, public addresses public", () => {
  const nodes = initialNodes({
    locations: 3,
    nodesPerLocation: 2,
    granularity: 'cross',
    natLocation: 3,
    peer: true,
    prefix: 'kl-',
  });
  for (const n of nodes) {
    assert.equal(IP.parse(n.lanIP).isPrivate(), true, `${n.name} LAN ${n.lanIP}`);
    if (n.publicIP) assert.equal(IP.parse(n.publicIP).isPrivate(), false, `${n.name} public ${n.publicIP}`);
  }
  assert.deepEqual(
    nodes.filter((n) => !n.publicIP).map((n) => n.name),
    ['loc3-n1', 'loc3-n2'],
    'only the NAT location has no public address',
  );
  const symmetric = initialNodes({
    locations: 4,
    nodesPerLocation: 1,
    granularity: 'cross',
    natLocation: 3,
    symmetricNatLocations: [1, 2],
    peer: false,
    prefix: 'kl-',
  });
  assert.deepEqual(
    symmetric.filter((n) => !n.publicIP).map((n) => n.name),
    ['loc1-n1', 'loc2-n1', 'loc3-n1'],
    'symmetric-NAT locations have no public address either',
  );
  assert.deepEqual(
    [1, 2, 3, 4].map((l) => natOf({ natLocation: 3, symmetricNatLocations: [1, 2] }, l)),
    ['symmetric', 'symmetric', 'nat', null],
  );
});

test('every node gets its own pod CIDR, namespace and addresses', () => {
  const nodes = initialNodes({
    locations: 3,
    nodesPerLocation: 3,
    granularity: 'cross',
    natLocation: null,
    peer: false,
    prefix: 'kl-',
  });
  for (const field of ['name', 'ns', 'podNs', 'lanIP', 'publicIP', 'podCIDR'] as const) {
    assert.equal(new Set(nodes.map((n) => n[field])).size, nodes.length, field);
  }
  assert.throws(() => labNode('kl-', 1, 1, 256, false), /node number 256: want 1 to 255/);
});

test('the clusters of a --clusters lab have disjoint ranges, addresses and namespace names; cluster 1 is the one-cluster lab', () => {
  const o = { locations: 3, nodesPerLocation: 2, granularity: 'cross' as const, natLocation: 2, peer: false };
  const one = initialNodes({ ...o, prefix: 'kl-' });
  assert.deepEqual(initialNodes({ ...o, prefix: 'kl-', cluster: 1 }), one);
  assert.equal(one[0]!.podCIDR, '10.42.1.0/24');
  assert.equal(one[0]!.publicIP, '198.18.1.11');
  const two = initialNodes({ ...o, prefix: 'kl-c2-', cluster: 2 });
  const both = [...one, ...two];
  for (const field of ['name', 'ns', 'podNs', 'lanIP', 'publicIP', 'podCIDR'] as const) {
    const values = both.map((n) => n[field]).filter((v) => v !== null);
    assert.equal(new Set(values).size, values.length, field);
  }
  const [p1, p2] = [clusterPlan(1), clusterPlan(2)];
  assert.equal(p1.wireguardSubnet, '10.4.0.0/16', "cluster 1 keeps Kilo's default WireGuard subnet");
  for (const a of [p1.podRange, p1.serviceCidr, p1.wireguardSubnet]) {
    for (const b of [p2.podRange, p2.serviceCidr, p2.wireguardSubnet])
      assert.equal(Cidr.parse(a).overlaps(Cidr.parse(b)), false, `${a} and ${b}`);
  }
  for (const n of two) assert.equal(Cidr.parse(p2.podRange).contains(IP.parse(n.podIP)), true, n.podIP);
  assert.notEqual(p1.apiAddress, p2.apiAddress);
  assert.throws(() => clusterPlan(3), /cluster 3: want 1 to 2/);
});
