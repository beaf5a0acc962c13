/**
 * The webhook's check of a Peer's allowed IPs against the Nodes' pod CIDRs (pod-cidr-overlaps.ts):
 * both families, spec.podCIDR and spec.podCIDRs, containment either way, and the refusal's words.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PodCIDRIndex } from '../../src/agent/pod-cidr-overlaps.js';
import type { KubeObject } from '../../src/model/parse.js';
import { node, wgKey } from '../helpers/cluster.js';
import { reviewSpec } from './review-helpers.js';

const nodes: KubeObject[] = [
  // spec.podCIDR alone (Kilo's field; an IPv4 cluster).
  node('v4', { podCIDR: '10.42.1.0/24' }),
  // spec.podCIDRs of both families (a dual-stack cluster), podCIDR the first.
  node('dual', { podCIDR: '10.42.2.0/24', podCIDRs: ['10.42.2.0/24', 'fd42:2::/64'] }),
  // spec.podCIDRs alone, IPv6 only.
  { apiVersion: 'v1', kind: 'Node', metadata: { name: 'v6' }, spec: { podCIDRs: ['fd42:3::/64'] } },
  // Nothing the agents would take: left out, not a reason to refuse every Peer.
  { apiVersion: 'v1', kind: 'Node', metadata: { name: 'bad' }, spec: { podCIDR: 'nope', podCIDRs: ['::/0', 7] } },
  { apiVersion: 'v1', kind: 'Node', metadata: { name: 'none' } },
];

const index = new PodCIDRIndex(nodes);
const held = (c: string) => {
  const errors = index.overlaps('p', { allowedIPs: [c] });
  return errors.length === 0 ? null : errors[0]!.message;
};

test('indexes spec.podCIDR and every spec.podCIDRs entry, skipping what is no CIDR or a catch-all', () => {
  // v4: 1, dual: podCIDR (same as podCIDRs[0]) + 2, v6: 1.
  assert.equal(index.size, 5);
});

test('a prefix equal to, inside or containing a pod CIDR overlaps it, in either family', () => {
  const cases: [string, string, string][] = [
    ['10.42.1.0/24', 'v4', '10.42.1.0/24'],
    ['10.42.1.7/32', 'v4', '10.42.1.0/24'],
    ['10.42.0.0/16', 'v4', '10.42.1.0/24'],
    ['10.42.2.128/25', 'dual', '10.42.2.0/24'],
    ['fd42:2::/64', 'dual', 'fd42:2::/64'],
    ['fd42:2::1/128', 'dual', 'fd42:2::/64'],
    ['fd42::/16', 'dual', 'fd42:2::/64'],
    ['fd42:3:0:0:8000::/65', 'v6', 'fd42:3::/64'],
  ];
  for (const [allowed, owner, podCIDR] of cases) {
    const message = held(allowed);
    assert.ok(message, `${allowed} overlaps ${podCIDR} of ${owner}`);
    for (const part of ['Peer "p"', 'spec.allowedIPs[0]', JSON.stringify(allowed), `Node "${owner}"`, podCIDR])
      assert.ok(message.includes(part), `${part} in ${message}`);
  }
});

test('a prefix beside every pod CIDR does not overlap, nor a value the Peer parser refuses', () => {
  for (const c of ['10.42.3.0/24', '10.43.0.0/16', '10.42.1.0/25x', 'fd42:4::/64', 'fd43::/16', '0.0.0.0/0', '::/0'])
    assert.equal(held(c), null, c);
  assert.deepEqual(index.overlaps('p', { allowedIPs: 'fd42:2::/64' }), []);
  assert.deepEqual(index.overlaps('p', null), []);
  assert.deepEqual(new PodCIDRIndex([]).overlaps('p', { allowedIPs: ['10.42.1.0/24'] }), []);
});

test('each overlapping allowed IP is named at its index; the others are not', () => {
  const errors = index.overlaps('p', { allowedIPs: ['10.5.0.1/32', 'fd42:3::/80', '10.42.2.0/24'] });
  assert.deepEqual(
    errors.map((e) => [e.field, e.value]),
    [
      ['spec.allowedIPs[1]', 'fd42:3::/80'],
      ['spec.allowedIPs[2]', '10.42.2.0/24'],
    ],
  );
});

test("the review refuses with the Peer's own errors and the overlaps in one message; without the check it allows", () => {
  const review = (spec: Record<string, unknown>, check: boolean) =>
    reviewSpec(spec, check ? (name, s) => index.overlaps(name, s) : undefined);
  const publicKey = wgKey('p');
  assert.deepEqual(review({ allowedIPs: ['fd42:3::/64'], publicKey }, false), { uid: 'u', allowed: true });
  assert.deepEqual(review({ allowedIPs: ['fd05::1/128'], publicKey }, true), { uid: 'u', allowed: true });
  const refused = review({ allowedIPs: ['fd42:3::/64'], publicKey }, true);
  assert.equal(refused.allowed, false);
  assert.match(
    refused.status!.message,
    /^Peer "p": field spec\.allowedIPs\[0\]: overlaps the pod CIDR fd42:3::\/64 of Node "v6": "fd42:3::\/64"$/,
  );
  const both = review({ allowedIPs: ['::/0', '10.42.1.0/24'], publicKey }, true).status!.message;
  assert.ok(both.includes('spec.allowedIPs[0]') && both.includes('catch-all'), both);
  assert.ok(both.includes('spec.allowedIPs[1]') && both.includes('Node "v4"'), both);
});
