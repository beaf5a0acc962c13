/**
 * The Peer webhook in a dual-stack cluster: IPv6 and dual-stack Peers are allowed, what is unsafe in
 * either family refused. A Peer's claim on a node's pod CIDR is refused when the webhook has the
 * Nodes (--check-pod-cidrs: pod-cidr-overlaps.test.ts, webhook-nodes.test.ts); without them (the
 * check off, or before the first list) it is the agents' to drop: the last test pins that they do,
 * in IPv6 too.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readyMesh } from '../../src/mesh/compute.js';
import { parseCluster } from '../../src/model/parse.js';
import { Cidr } from '../../src/net/cidr.js';
import { node, NOW, peer, wgKey } from '../helpers/cluster.js';
import { reviewSpec } from './review-helpers.js';

const review = (spec: Record<string, unknown>) => reviewSpec(spec);

const publicKey = wgKey('p');

test('an IPv6 Peer and a dual-stack Peer (allowed IPs of both families, an IPv6 endpoint) are allowed', () => {
  const allowed = [
    { allowedIPs: ['fd05::1/128'], publicKey },
    { allowedIPs: ['2001:db8:5::/64'], publicKey, endpoint: { dnsOrIP: { ip: '2001:db8::5' }, port: 51820 } },
    {
      allowedIPs: ['10.5.0.1/32', 'fd05::1/128'],
      publicKey,
      endpoint: { dnsOrIP: { ip: '198.51.100.5' }, port: 51820 },
    },
    { allowedIPs: ['10.5.0.1/32', 'fd05::1/128'], publicKey, endpoint: { dnsOrIP: { dns: 'peer.example' }, port: 1 } },
  ];
  for (const spec of allowed) assert.deepEqual(review(spec), { uid: 'u', allowed: true }, JSON.stringify(spec));
});

test('a catch-all of either family, alone or beside a good prefix, and an unspecified IPv6 endpoint are refused, naming field and value', () => {
  const refused: [Record<string, unknown>, string, string][] = [
    [{ allowedIPs: ['::/0'], publicKey }, 'spec.allowedIPs[0]', '::/0'],
    [{ allowedIPs: ['0.0.0.0/0'], publicKey }, 'spec.allowedIPs[0]', '0.0.0.0/0'],
    [{ allowedIPs: ['10.5.0.1/32', '::/0'], publicKey }, 'spec.allowedIPs[1]', '::/0'],
    [{ allowedIPs: ['fd05::1/128', '0::0/0'], publicKey }, 'spec.allowedIPs[1]', '0::0/0'],
    [{ allowedIPs: ['fd05::1/128', '0.0.0.0/0'], publicKey }, 'spec.allowedIPs[1]', '0.0.0.0/0'],
    [
      { allowedIPs: ['fd05::1/128'], publicKey, endpoint: { dnsOrIP: { ip: '::' }, port: 51820 } },
      'spec.endpoint.dnsOrIP.ip',
      '::',
    ],
    [{ allowedIPs: ['fd05::1/129'], publicKey }, 'spec.allowedIPs[0]', 'fd05::1/129'],
  ];
  for (const [spec, field, value] of refused) {
    const r = review(spec);
    assert.equal(r.allowed, false, JSON.stringify(spec));
    const message = r.status?.message ?? '';
    for (const part of ['Peer "p"', field, JSON.stringify(value)])
      assert.ok(message.includes(part), `${part} in ${message}`);
  }
});

test("what the webhook does not check (no Nodes), the agents drop: a Peer's claim on a node's IPv6 pod CIDR, the node stays", () => {
  const subnets = [Cidr.parse('10.4.0.0/16'), Cidr.parse('fd4b::/64')];
  const cluster = parseCluster([
    node('a', { internalIP: '10.1.0.1/24', endpoint: '198.51.100.1:51820', podCIDRs: ['10.2.1.0/24', 'fd42:1::/64'] }),
    peer('p', { allowedIPs: ['10.5.0.1/32', 'fd42:1::/80'] }),
  ]);
  assert.deepEqual(review({ allowedIPs: ['10.5.0.1/32', 'fd42:1::/80'], publicKey }), { uid: 'u', allowed: true });
  const { nodes, peers, conflicts } = readyMesh(cluster, { subnet: subnets[0]!, subnets }, NOW);
  assert.deepEqual(
    nodes.map((n) => n.name),
    ['a'],
  );
  // The claim is dropped, the rest of the Peer stays.
  assert.deepEqual(
    peers.map((p) => p.allowedIPs.map(String)),
    [['10.5.0.1/32']],
  );
  assert.ok(
    conflicts.some((e) => e.message.includes('Peer "p"') && e.message.includes('fd42:1::/80')),
    conflicts.map((e) => e.message).join('\n'),
  );
});
