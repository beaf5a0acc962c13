/**
 * --compatibility=cilium in the agent: the node's Cilium internal IP is published under Kilo's
 * annotation ("" when unknown or not beside Cilium), and tunnel routes use the interface the
 * tunnel lookup names (cilium_tunl when Cilium made it).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { annotationPatch, type LocalFacts } from '../../src/agent/local-node.js';
import { Annotation } from '../../src/model/annotations.js';
import { IP } from '../../src/net/cidr.js';
import { NOW, node, peer } from '../helpers/cluster.js';
import { settled, startHarness, waitUntil, bareLocalNode, type Harness } from './agent-harness.js';

const kilo = (h: Harness, name: string) => h.api.node(name)?.metadata?.annotations ?? {};

describe('local node: the cilium-internal-ip annotation', () => {
  const facts: LocalFacts = {
    publicKey: 'k',
    endpoint: null,
    internalIP: null,
    wireGuardIP: null,
    granularity: 'location',
    discoveredEndpoints: new Map(),
    now: NOW,
  };
  const current = { [Annotation.lastSeen]: String(NOW) };

  test('is the address when known, "" otherwise (not beside Cilium, or cilium_host has none yet)', () => {
    assert.equal(
      annotationPatch(current, { ...facts, ciliumInternalIP: IP.parse('10.42.0.180') })?.[Annotation.ciliumInternalIP],
      '10.42.0.180',
    );
    assert.equal(annotationPatch(current, { ...facts, ciliumInternalIP: null })?.[Annotation.ciliumInternalIP], '');
    assert.equal(annotationPatch(current, facts)?.[Annotation.ciliumInternalIP], '');
  });

  test('an unchanged address is not written again', () => {
    const published = {
      ...current,
      [Annotation.key]: 'k',
      [Annotation.internalIP]: '',
      [Annotation.wireGuardIP]: '',
      [Annotation.granularity]: 'location',
      [Annotation.discoveredEndpoints]: '{}',
      [Annotation.ciliumInternalIP]: '10.42.0.180',
      [Annotation.cniCompatibilityIP]: '10.42.0.180',
    };
    assert.equal(annotationPatch(published, { ...facts, ciliumInternalIP: IP.parse('10.42.0.180') }), null);
    // Kilo's name and the contract's (SEMANTICS.md) carry the same address.
    assert.deepEqual(annotationPatch(published, { ...facts, ciliumInternalIP: IP.parse('10.42.0.181') }), {
      [Annotation.ciliumInternalIP]: '10.42.0.181',
      [Annotation.cniCompatibilityIP]: '10.42.0.181',
    });
  });
});

/** a (eu leader) and b (eu) beside Cilium, b having published its Cilium internal IP; c in us. */
function seedCilium(h: { addNode(n: ReturnType<typeof node>): void; addPeer(p: ReturnType<typeof peer>): void }): void {
  h.addNode(bareLocalNode());
  h.addNode(
    node('b', {
      location: 'eu',
      endpoint: '198.51.100.2:51820',
      internalIP: '192.168.0.2/24',
      podCIDR: '10.42.1.0/24',
      annotations: { [Annotation.ciliumInternalIP]: '10.42.1.180' },
    }),
  );
  h.addNode(
    node('c', { location: 'us', endpoint: '203.0.113.3:51820', internalIP: '192.168.1.3/24', podCIDR: '10.42.2.0/24' }),
  );
}

describe('agent: --compatibility=cilium', () => {
  const mesh = { compatibility: 'cilium' as const, local: false, encapsulate: 'crosssubnet' as const };

  test("publishes the Cilium internal IP once cilium_host has one, and routes to b's pods by IPIP over the looked-up tunnel", async (t) => {
    const h = await startHarness(t, { seed: (api) => seedCilium(api), mesh, start: false });
    // Cilium's devices on the machine; cilium_host has no address yet.
    h.kernel.addLink('cilium_tunl', { up: false });
    h.kernel.addLink('cilium_host', {});
    await h.agent.start();
    await waitUntil(
      'the agent planned and applied',
      () => h.agent.status.plan !== null && h.agent.status.lastReconcileOk,
      10_000,
    );
    await settled(h);
    assert.equal(kilo(h, 'a')[Annotation.ciliumInternalIP], '', 'nothing known yet: ""');
    const routes = h.kernel.routes.map((r) => `${r.dst} via ${r.gw} dev ${r.dev}${r.onlink ? ' onlink' : ''}`);
    assert.ok(routes.includes('10.42.1.0/24 via 10.42.1.180 dev cilium_tunl onlink'), routes.join('\n'));

    assert.equal(h.kernel.link('cilium_tunl').up, true, 'cilium_tunl was brought up');

    // Cilium gives cilium_host its address after the agent started: the first pass after the
    // encapsulation's recheck period publishes it.
    h.kernel.addAddress('cilium_host', '10.42.0.180/32');
    await h.agent.reconcileOnce();
    assert.equal(kilo(h, 'a')[Annotation.ciliumInternalIP], '', 'asked again only after the recheck period');
    h.clock.ms += 30_000;
    await h.agent.reconcileOnce();
    assert.equal(kilo(h, 'a')[Annotation.ciliumInternalIP], '10.42.0.180');
  });

  test('not beside Cilium, the annotation is ""', async (t) => {
    const h = await startHarness(t);
    await settled(h);
    assert.equal(kilo(h, 'a')[Annotation.ciliumInternalIP], '');
  });
});
