import assert from 'node:assert/strict';
import { test } from 'node:test';
import { initialNodes, labNode } from '../../packages/lab/src/layout.js';
import { IP } from '../../src/net/cidr.js';

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
