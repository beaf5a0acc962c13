/**
 * The annotations a node's agent publishes, as Kilo publishes them: `discovered-endpoints` is `{}`
 * when nothing roams; an `endpoint` already on the Node is kept (Kilo's); the internal IP is
 * detected again at every start (kilo-ts's: see docs/migrating-from-kilo.md).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { annotationPatch, type LocalFacts } from '../../src/agent/local-node.js';
import { Annotation } from '../../src/model/annotations.js';
import { lostIPv6Pods } from '../../src/model/ipv6-pods.js';
import { Cidr, IP } from '../../src/net/cidr.js';
import { NOW } from '../helpers/cluster.js';

const facts: LocalFacts = {
  publicKey: 'k',
  endpoint: '198.18.1.11:51820',
  internalIP: Cidr.parse('192.168.1.11/24'),
  wireGuardIP: null,
  granularity: 'full',
  discoveredEndpoints: new Map(),
  now: NOW,
};

describe('local node annotations', () => {
  test('discovered-endpoints: {} when nothing roams, as Kilo writes it; the endpoints when something does', () => {
    assert.equal(annotationPatch({}, facts)?.[Annotation.discoveredEndpoints], '{}');
    const roaming = new Map([['peerkey=', { ip: IP.parse('198.18.2.1'), dns: null, port: 1024 }]]);
    assert.equal(
      annotationPatch({}, { ...facts, discoveredEndpoints: roaming })?.[Annotation.discoveredEndpoints],
      '{"peerkey=":{"IP":"198.18.2.1","Port":1024,"Zone":""}}',
    );
    // Kilo's `{}` on a node switched to kilo-ts is left alone.
    const current = { [Annotation.discoveredEndpoints]: '{}', [Annotation.lastSeen]: String(NOW) };
    assert.equal(annotationPatch(current, facts)?.[Annotation.discoveredEndpoints], undefined);
  });

  test('an endpoint already on the Node is kept; a stale internal IP is replaced by the detected one', () => {
    const current = {
      [Annotation.endpoint]: '203.0.113.7:51820',
      [Annotation.internalIP]: '10.42.1.1/24',
      [Annotation.lastSeen]: String(NOW),
    };
    const patch = annotationPatch(current, facts);
    assert.equal(patch?.[Annotation.endpoint], undefined);
    assert.equal(patch?.[Annotation.internalIP], '192.168.1.11/24');
    assert.equal(annotationPatch({}, facts)?.[Annotation.endpoint], '198.18.1.11:51820');
  });
});

/**
 * A node whose pods lost IPv6 (docs/dual-stack.md#edge-cases): its agent removes the -ipv6
 * annotations it wrote in its dual-stack days, whichever --subnet it runs with, and keeps the
 * wireguard-ip-ipv6 claim and the operator's force-*-ipv6.
 */
describe('stale -ipv6 annotations', () => {
  const stale = {
    [Annotation.lastSeen]: String(NOW),
    [Annotation.internalIPv6]: 'fd10:1::11/64',
    [Annotation.endpointIPv6]: '[2001:db8:1::11]:51820',
    [Annotation.discoveredEndpointsIPv6]: '{"k2":{"IP":"2001:db8::9","Port":4,"Zone":""}}',
    [Annotation.wireGuardIPv6]: 'fd4b::1/64',
    [Annotation.forceEndpointIPv6]: '[2001:db8:1::99]:51820',
  };

  test('which nodes lost IPv6 pods: IPv4 pod CIDRs only; none yet is not judged', () => {
    assert.equal(lostIPv6Pods({ podCIDRs: ['10.2.1.0/24'], podCIDR: '10.2.1.0/24' }), true);
    assert.equal(lostIPv6Pods({ podCIDR: '10.2.1.0/24' }), true);
    assert.equal(lostIPv6Pods({ podCIDRs: ['10.2.1.0/24', 'fd42:1::/64'] }), false);
    assert.equal(lostIPv6Pods({ podCIDR: 'fd42:1::/64' }), false);
    assert.equal(lostIPv6Pods({}), false);
    assert.equal(lostIPv6Pods(undefined), false);
  });

  test('the agent removes its own stale -ipv6 annotations, in a dual-stack mesh and in one of IPv4', () => {
    const ipv6 = { internalIP: null, endpoint: null, wireGuardIP: 'fd4b::1/64' };
    for (const f of [
      { ...facts, lostIPv6Pods: true },
      { ...facts, lostIPv6Pods: true, ipv6 },
    ]) {
      const patch = annotationPatch(stale, f)!;
      assert.equal(patch[Annotation.internalIPv6], null);
      assert.equal(patch[Annotation.endpointIPv6], null);
      assert.equal(patch[Annotation.discoveredEndpointsIPv6], null);
      assert.ok(!(Annotation.wireGuardIPv6 in patch), 'the claim on the IPv6 WireGuard IP stays');
      assert.ok(!(Annotation.forceEndpointIPv6 in patch), "the operator's stays");
    }
    // With IPv6 pods, an agent of one family leaves them alone, as before.
    const patch = annotationPatch(stale, facts);
    for (const k of [Annotation.internalIPv6, Annotation.endpointIPv6, Annotation.discoveredEndpointsIPv6])
      assert.ok(!patch || !(k in patch), k);
    // A node that never had them gets no patch for them.
    const clean = annotationPatch({ [Annotation.lastSeen]: String(NOW) }, { ...facts, lostIPv6Pods: true })!;
    for (const k of [Annotation.internalIPv6, Annotation.endpointIPv6, Annotation.discoveredEndpointsIPv6])
      assert.ok(!(k in clean), k);
  });

  test('a dual-stack agent whose own endpoint is IPv6 or unknown removes a discovered-endpoints-ipv6 left over', () => {
    const ipv6 = { internalIP: null, endpoint: null, wireGuardIP: 'fd4b::1/64' };
    for (const endpoint of ['[2001:db8:1::11]:51820', null]) {
      const patch = annotationPatch(stale, { ...facts, endpoint, ipv6 })!;
      assert.equal(patch[Annotation.discoveredEndpointsIPv6], null, String(endpoint));
    }
  });
});
