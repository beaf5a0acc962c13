/**
 * The agent and --wireguard-ip-allocation (issue 35): in `stable` mode every member of a segment
 * publishes the segment's address (its claim), a pass without a topology keeps the published one,
 * and a cluster mixing allocation rules is logged once.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Annotation } from '../../src/model/annotations.js';
import { formatMeshFlags } from '../../src/model/mesh-flags.js';
import { publishedWireGuardIP } from '../../src/agent/published-wireguard-ip.js';
import { defaultMeshOptions } from '../../src/mesh/options.js';
import { node, peer } from '../helpers/cluster.js';
import { defaultAnnounced } from '../helpers/mesh-flags.js';
import { TestApiServer } from '../fixtures/apiserver.js';
import { bareLocalNode, settled, startHarness, waitUntil } from './agent-harness.js';

/** a (local) and b in eu, b leading by annotation; c in us, which published 10.4.0.1 before. */
function seed(api: TestApiServer): void {
  api.addNode(bareLocalNode());
  api.addNode(
    node('b', {
      location: 'eu',
      leader: true,
      endpoint: '198.51.100.2:51820',
      internalIP: '192.168.0.2/24',
      podCIDR: '10.42.1.0/24',
    }),
  );
  api.addNode(
    node('c', {
      location: 'us',
      endpoint: '203.0.113.3:51820',
      internalIP: '192.168.1.3/24',
      podCIDR: '10.42.2.0/24',
      wireGuardIP: '10.4.0.1/16',
    }),
  );
  api.addPeer(peer('laptop', { allowedIPs: ['10.5.0.1/32'] }));
}

const stableFlags = formatMeshFlags({ ...defaultAnnounced, wireguardIpAllocation: 'stable' });

describe('agent: WireGuard IP allocation', () => {
  test('stable: a follower publishes its location address (us keeps the one it published); kilo: "" as Kilo', async (t) => {
    const h = await startHarness(t, {
      seed,
      mesh: { wireGuardIPAllocation: 'stable' },
      agent: { meshFlags: stableFlags },
    });
    await settled(h);
    const a = h.api.node('a')!.metadata!.annotations!;
    assert.equal(h.agent.status.plan?.leader, false);
    assert.equal(h.agent.status.plan?.wireGuardIP, null);
    assert.equal(a[Annotation.wireGuardIP], '10.4.0.2/16');
    assert.equal(a[Annotation.meshFlags], stableFlags);
    // b and c announce nothing (Kilo's agents, as far as anyone can tell): said once, however many passes.
    await waitUntil('the mix is logged', () => h.log.entries.some((e) => /different rules/.test(e.msg)), 5_000);
    for (let i = 0; i < 3; i++) await h.agent.reconcileOnce();
    const said = h.log.entries.filter((e) => /different rules/.test(e.msg));
    assert.equal(said.length, 1);
    assert.equal(said[0]!.level, 'warn');
    assert.match(said[0]!.msg, /stable on 1 \("a"\); no announcement \(Kilo's agent\) on 2 \("b", "c"\)/);
  });

  test('kilo (default): the follower publishes "", and a cluster of one rule says nothing', async (t) => {
    const h = await startHarness(t, { seed });
    await settled(h);
    assert.equal(h.api.node('a')!.metadata!.annotations![Annotation.wireGuardIP], '');
    assert.ok(!h.log.entries.some((e) => /different rules/.test(e.msg)));
    // Passes with nothing changed do not look again (the check is skipped); a node's announcement
    // changing after them is still found.
    for (let i = 0; i < 2; i++) await h.agent.reconcileOnce();
    h.api.patchNode('c', { metadata: { annotations: { [Annotation.meshFlags]: stableFlags } } });
    await waitUntil('the mix is logged', () => h.log.entries.some((e) => /different rules/.test(e.msg)), 5_000);
    assert.match(h.log.entries.find((e) => /different rules/.test(e.msg))!.msg, /stable on 1 \("c"\)/);
  });

  test('stable: a pass without a topology (the node not ready yet, as after a restart) keeps the published address', () => {
    const stable = { ...defaultMeshOptions, wireGuardIPAllocation: 'stable' as const };
    assert.equal(publishedWireGuardIP(stable, null, null, '10.4.0.7/16'), '10.4.0.7/16');
    assert.equal(publishedWireGuardIP(stable, null, null, undefined), null);
    assert.equal(publishedWireGuardIP(defaultMeshOptions, null, null, '10.4.0.7/16'), null);
  });
});
