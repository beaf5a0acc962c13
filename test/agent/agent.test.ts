/**
 * The agent loop end to end over fakes: the real KubernetesSource against the test API server,
 * fake WireGuard device, kernel routes/links and netfilter. What the cluster says must reach
 * the machine, and nothing else may be written.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { kiloRouteProtocol } from '../../src/dataplane/routes/constants.js';
import { Annotation } from '../../src/model/annotations.js';
import { NOW, node, peer, wgKey } from '../helpers/cluster.js';
import { eventually, seesCheckIn, settled, startHarness, type Harness } from './agent-harness.js';

const kilo = (h: Harness, name: string) => h.api.node(name)?.metadata?.annotations ?? {};

async function allowedIPsOf(h: Harness, key: string): Promise<string[] | null> {
  const p = (await h.device.read()).peers.find((x) => x.publicKey === key);
  return p ? [...p.allowedIPs].sort() : null;
}

describe('agent: publishing the local node', () => {
  test('writes key, endpoint, internal IP, WireGuard IP, granularity and last-seen by merge patch of its own node only', async (t) => {
    const h = await startHarness(t);
    await settled(h);
    const a = kilo(h, 'a');
    assert.equal(a[Annotation.key], h.publicKey);
    assert.equal(a[Annotation.endpoint], '198.51.100.1:51820');
    assert.equal(a[Annotation.internalIP], '192.168.0.1/24');
    assert.equal(a[Annotation.granularity], 'location');
    assert.equal(a[Annotation.lastSeen], String(NOW));
    // a is the leader of eu (sorted first) and takes the first address of 10.4.0.0/16.
    assert.equal(a[Annotation.wireGuardIP], '10.4.0.1/16');
    // The operator's annotations stay untouched.
    assert.equal(a[Annotation.location], 'eu');
    // Only merge patches of node a: no other write, no Peer write.
    assert.ok(h.api.count('patch-node') >= 1);
    assert.equal(h.api.count('write', 'other'), 0, 'kg made a request that is neither a read nor a node patch');
    assert.ok(h.api.queriesOf('patch-node').length >= 1);
    assert.equal(kilo(h, 'b')[Annotation.key], wgKey('b'), 'another node was rewritten');
    assert.equal(kilo(h, 'b')[Annotation.wireGuardIP], undefined, 'another node was rewritten');
  });

  test('refreshes last-seen on each interval tick, and not in between', async (t) => {
    const h = await startHarness(t);
    await settled(h);
    const before = h.api.count('patch-node');
    h.clock.ms += 10_000;
    await h.agent.reconcileOnce();
    assert.equal(h.api.count('patch-node'), before, 'patched although nothing was due');
    // A tick lands a little under 30 s after the last write: it must still refresh.
    h.clock.ms += 19_500;
    await h.agent.reconcileOnce();
    assert.equal(kilo(h, 'a')[Annotation.lastSeen], String(NOW + 29));
  });
});

describe('agent: cluster changes reach the dataplane', () => {
  test('the initial mesh: the other location and the Peer are WireGuard peers, routes and firewall written', async (t) => {
    const h = await startHarness(t);
    await settled(h);
    // Location granularity: b shares a's location (no WireGuard peer), c is the us leader.
    assert.deepEqual(await h.peerKeys(), [wgKey('c'), wgKey('laptop')].sort());
    assert.deepEqual(await allowedIPsOf(h, wgKey('c')), ['10.4.0.2/32', '10.42.2.0/24', '192.168.1.3/32'].sort());
    assert.deepEqual(await allowedIPsOf(h, wgKey('laptop')), ['10.5.0.1/32']);
    assert.equal(h.kernel.link('kilo0').up, true);
    assert.deepEqual(h.kernel.link('kilo0').addresses, ['10.4.0.1/16']);
    const dsts = h.kernel.routes.filter((r) => r.protocol === 107).map((r) => r.dst);
    assert.ok(dsts.includes('10.42.2.0/24'), `no route to c's pods in ${dsts.join(' ')}`);
    assert.ok(dsts.includes('10.42.1.0/24'), `no route to b's pods in ${dsts.join(' ')}`);
    assert.ok(h.firewallWrites() > 0);
  });

  test('node add, update and delete, and Peer add, change and delete', async (t) => {
    const h = await startHarness(t);
    await settled(h);

    h.api.addNode(
      node('d', {
        location: 'asia',
        endpoint: '203.0.113.4:51820',
        internalIP: '192.168.2.4/24',
        podCIDR: '10.42.3.0/24',
      }),
    );
    await eventually('d is a WireGuard peer', async () => (await h.peerKeys()).includes(wgKey('d')));

    h.api.patchNode('d', { spec: { podCIDR: '10.42.9.0/24' } });
    await eventually(
      "d's new pod CIDR is routed to it",
      async () => (await allowedIPsOf(h, wgKey('d')))?.includes('10.42.9.0/24') === true,
    );
    assert.equal((await allowedIPsOf(h, wgKey('d')))?.includes('10.42.3.0/24'), false);
    await eventually(
      'the route follows',
      () =>
        h.kernel.routes.some((r) => r.dst === '10.42.9.0/24') && !h.kernel.routes.some((r) => r.dst === '10.42.3.0/24'),
    );

    h.api.deleteNode('d');
    await eventually('d is gone from WireGuard', async () => !(await h.peerKeys()).includes(wgKey('d')));
    await eventually('and from the routes', () => !h.kernel.routes.some((r) => r.dst === '10.42.9.0/24'));

    h.api.addPeer(peer('phone', { allowedIPs: ['10.5.0.7/32'], endpoint: '192.0.2.7:51820' }));
    await eventually(
      'the new Peer is configured',
      async () => (await allowedIPsOf(h, wgKey('phone')))?.[0] === '10.5.0.7/32',
    );
    h.api.patchPeer('phone', { spec: { allowedIPs: ['10.5.0.8/32'] } });
    await eventually(
      "the Peer's allowed IPs follow",
      async () => (await allowedIPsOf(h, wgKey('phone')))?.[0] === '10.5.0.8/32',
    );
    h.api.deletePeer('phone');
    await eventually('the Peer is removed', async () => !(await h.peerKeys()).includes(wgKey('phone')));
  });

  test('a heartbeat of a ready node makes no reconcile; one that makes a stale node ready does', async (t) => {
    const h = await startHarness(t);
    await settled(h);
    const before = h.agent.status.reconciles;
    for (const [i, name] of ['b', 'c', 'b'].entries()) {
      h.api.patchNode(name, { metadata: { annotations: { [Annotation.lastSeen]: String(NOW + 10 + i) } } });
    }
    await eventually('the heartbeats were seen', () =>
      h.source.objects().some((o) => o.metadata?.annotations?.[Annotation.lastSeen] === String(NOW + 12)),
    );
    await sleep(100);
    await settled(h);
    assert.equal(h.agent.status.reconciles, before, 'a last-seen refresh of a ready node was planned again');

    const stale = { location: 'asia', endpoint: '203.0.113.4:51820', internalIP: '192.168.2.4/24' } as const;
    h.api.addNode(node('d', { ...stale, podCIDR: '10.42.3.0/24', lastSeen: NOW - 120 }));
    await eventually('the stale node was planned (and left out)', () => h.agent.status.reconciles > before);
    await settled(h);
    assert.equal((await h.peerKeys()).includes(wgKey('d')), false);
    h.api.patchNode('d', { metadata: { annotations: { [Annotation.lastSeen]: String(NOW) } } });
    await eventually('d is ready again and a WireGuard peer', async () => (await h.peerKeys()).includes(wgKey('d')));
  });

  test('a heartbeat with path-health beside it makes no reconcile; a mesh annotation beside both does', async (t) => {
    const h = await startHarness(t);
    await settled(h);
    const before = h.agent.status.reconciles;
    const plans = h.agent.status.plans;
    // As every kilo-ts agent checks in: last-seen and its path-health, whose handshake times moved.
    for (const [i, name] of ['b', 'c', 'b'].entries()) {
      const annotations = { [Annotation.lastSeen]: String(NOW + 10 + i), [Annotation.pathHealth]: `{"n":${i}}` };
      h.api.patchNode(name, { metadata: { annotations } });
    }
    await eventually('the heartbeats were seen', () =>
      h.source.objects().some((o) => o.metadata?.annotations?.[Annotation.lastSeen] === String(NOW + 12)),
    );
    await sleep(100);
    await settled(h);
    assert.equal(h.agent.status.reconciles, before, 'a check-in with path-health of a ready node was planned again');

    const annotations = {
      [Annotation.lastSeen]: String(NOW + 20),
      [Annotation.pathHealth]: '{"n":9}',
      [Annotation.endpoint]: '198.51.100.98:51820',
    };
    h.api.patchNode('c', { metadata: { annotations } });
    await eventually('the new endpoint was planned', () =>
      h.agent.status.topology!.segments.some((s) => s.nodes.some((n) => n.endpoint?.ip?.text === '198.51.100.98')),
    );
    assert.ok(h.agent.status.plans > plans);
  });

  test("a heartbeat carries the node's parse over with the new last-seen; other changes parse anew", async (t) => {
    const h = await startHarness(t);
    await settled(h);
    const nodeOf = (name: string) =>
      h.agent.status.topology!.segments.flatMap((s) => s.nodes).find((n) => n.name === name)!;
    const before = nodeOf('b');
    h.api.patchNode('b', { metadata: { annotations: { [Annotation.lastSeen]: String(NOW + 10) } } });
    await eventually('the heartbeat was seen', () =>
      h.source.objects().some((o) => o.metadata?.annotations?.[Annotation.lastSeen] === String(NOW + 10)),
    );
    await settled(h);
    // Another object's change makes the next pass plan, from b's carried parse.
    const plans = h.agent.status.plans;
    h.api.addPeer(peer('phone', { allowedIPs: ['10.5.0.7/32'] }));
    await eventually('the Peer was planned', () => h.agent.status.plans > plans);
    await settled(h);
    const after = nodeOf('b');
    assert.equal(after.lastSeen, NOW + 10);
    // Not parsed again: the addresses are the very objects of the earlier parse.
    assert.equal(after.endpoint, before.endpoint);
    assert.deepEqual({ ...after, lastSeen: before.lastSeen }, before);

    h.api.patchNode('b', { metadata: { annotations: { [Annotation.endpoint]: '198.51.100.99:51820' } } });
    await eventually('the new endpoint was planned', () => nodeOf('b').endpoint?.ip?.text === '198.51.100.99');
  });

  test('a check-in pass with the same nodes ready only publishes; one that finds a node stale plans', async (t) => {
    const h = await startHarness(t);
    await settled(h);
    const plan = h.agent.status.plan;
    const wg = h.device.history.length;
    const patches = h.api.count('patch-node');
    h.clock.ms += 31_000;
    await h.agent.reconcileOnce(true);
    assert.equal(h.api.count('patch-node'), patches + 1, 'the check-in was published');
    assert.equal(h.agent.status.plan, plan, 'the plan was not made again');
    assert.equal(h.device.history.length, wg);
    await seesCheckIn(h, 'a', NOW + 31, 'the check-in was seen');
    await settled(h);

    // b and c checked in last at NOW: a minute past a's check-in they are stale.
    h.clock.ms += 60_000;
    await h.agent.reconcileOnce(true);
    assert.notEqual(h.agent.status.plan, plan, 'a node went stale: planned again');
    assert.equal((await h.peerKeys()).includes(wgKey('b')), false);
  });

  test('a resync with nothing changed repairs the machine with the last plan; a change or a node gone stale plans', async (t) => {
    const h = await startHarness(t);
    await settled(h);
    const plan = h.agent.status.plan;
    const plans = h.agent.status.plans;
    const routes = () => h.kernel.routes.map((r) => JSON.stringify(r)).sort();
    const want = routes();
    const kilo = h.kernel.routes.find((r) => r.protocol === kiloRouteProtocol);
    assert.ok(kilo, 'the mesh has a route of Kilo');
    h.kernel.routeDel(kilo);
    // A heartbeat of a ready node and time moving on (a's check-in is due) change no plan.
    h.api.patchNode('b', { metadata: { annotations: { [Annotation.lastSeen]: String(NOW + 10) } } });
    await eventually('the heartbeat was seen', () =>
      h.source.objects().some((o) => o.metadata?.annotations?.[Annotation.lastSeen] === String(NOW + 10)),
    );
    h.clock.ms += 31_000;
    h.agent.resync();
    await settled(h);
    assert.deepEqual(routes(), want, 'the deleted route is back');
    assert.equal(h.agent.status.plans, plans, 'planned again with nothing changed');
    assert.equal(h.agent.status.plan, plan);
    await seesCheckIn(h, 'a', NOW + 31, "a's check-in was seen");
    await settled(h);

    // c checked in last at NOW, b at NOW + 10: past a minute they are stale, with no event.
    h.clock.ms += 60_000;
    h.agent.resync();
    await settled(h);
    assert.equal(h.agent.status.plans, plans + 1, 'a node went stale: planned again');
    assert.equal((await h.peerKeys()).includes(wgKey('c')), false);
    const stale = h.agent.status.plans;

    h.api.patchNode('b', { metadata: { annotations: { [Annotation.endpoint]: '198.51.100.99:51820' } } });
    await eventually('a change was planned', () => h.agent.status.plans > stale);
  });

  test('a burst of events is handled by a few reconciles, not one each', async (t) => {
    const h = await startHarness(t);
    await settled(h);
    const before = h.agent.status.reconciles;
    for (let i = 0; i < 30; i++) {
      h.api.addPeer(peer(`burst-${i}`, { allowedIPs: [`10.6.0.${i + 1}/32`] }));
    }
    await eventually('all 30 Peers are configured', async () => (await h.peerKeys()).length === 2 + 30);
    await settled(h);
    const used = h.agent.status.reconciles - before;
    assert.ok(used <= 5, `30 events took ${used} reconciles`);
  });

  test('an unchanged cluster costs no write: resync, repeated reconciles and a last-seen refresh', async (t) => {
    const h = await startHarness(t);
    await settled(h);
    const wg = h.device.history.length;
    const kernel = h.kernel.writes;
    const fw = h.firewallWrites();

    h.source.resync();
    await sleep(200);
    await settled(h);
    await h.agent.reconcileOnce();
    assert.equal(h.agent.status.lastResult?.writes, 0);
    // last-seen moves: a node change goes through the whole loop and must still write nothing.
    h.clock.ms += 31_000;
    const patches = h.api.count('patch-node');
    await h.agent.reconcileOnce();
    assert.equal(h.api.count('patch-node'), patches + 1);
    await eventually('the refreshed node was seen', () =>
      h.source.objects().some((o) => o.metadata?.annotations?.[Annotation.lastSeen] === String(NOW + 31)),
    );
    await settled(h);

    assert.equal(h.device.history.length, wg, `WireGuard writes: ${h.device.history.slice(wg).join('; ')}`);
    assert.equal(h.kernel.writes, kernel, 'route, rule or link writes');
    assert.equal(h.firewallWrites(), fw, 'iptables-restore runs');
    assert.equal(h.agent.status.lastResult?.writes, 0);
  });
});

describe('agent: bad input and a broken API server', () => {
  test('a node with malformed annotations drops out, the others stay; logged once and counted', async (t) => {
    const h = await startHarness(t);
    await settled(h);
    h.api.addNode(
      node('bad', {
        location: 'asia',
        endpoint: 'not an endpoint',
        internalIP: '192.168.3.5/24',
        podCIDR: '10.42.5.0/24',
      }),
    );
    h.api.addNode(
      node('good', {
        location: 'asia',
        endpoint: '203.0.113.6:51820',
        internalIP: '192.168.3.6/24',
        podCIDR: '10.42.6.0/24',
      }),
    );
    await eventually('the good node of asia is a peer', async () => (await h.peerKeys()).includes(wgKey('good')));
    // More reconciles with the bad node still there: it must not be logged again.
    for (let i = 0; i < 3; i++) await h.agent.reconcileOnce();
    assert.deepEqual(await h.peerKeys(), [wgKey('c'), wgKey('good'), wgKey('laptop')].sort());
    const warnings = h.log.entries.filter((e) => e.level === 'warn' && JSON.stringify(e.obj).includes('bad'));
    assert.equal(warnings.length, 1, JSON.stringify(warnings));
    assert.equal(warnings[0]!.obj['object'], 'Node "bad"');
    assert.equal(warnings[0]!.obj['field'], `metadata.annotations["${Annotation.endpoint}"]`);
    assert.equal(warnings[0]!.obj['value'], 'not an endpoint');
    const metrics = await h.metrics.registry.metrics();
    assert.match(metrics, /^kilo_invalid_objects_total\{kind="Node"\} 1$/m);
  });

  test('the API server away: the dataplane stays as it was, then the agent reconnects and converges', async (t) => {
    const h = await startHarness(t);
    await settled(h);
    const peersBefore = await h.device.read();
    const routesBefore = h.kernel.routes.length;
    const wg = h.device.history.length;

    await h.api.stop();
    // A long outage as the agent's clock sees it: last-seen annotations of every node go stale
    // and the agent cannot publish its own. Nothing must be torn down meanwhile.
    for (let i = 0; i < 4; i++) {
      h.clock.ms += 40_000;
      await h.agent.reconcileOnce();
    }
    await sleep(1_000);
    assert.deepEqual(
      (await h.device.read()).peers.map((p) => p.publicKey),
      peersBefore.peers.map((p) => p.publicKey),
    );
    assert.equal(
      h.device.history.length,
      wg,
      `WireGuard writes during the outage: ${h.device.history.slice(wg).join('; ')}`,
    );
    assert.equal(h.kernel.routes.length, routesBefore);
    assert.equal(h.agent.status.lastResult?.writes, 0, 'the outage reconciles planned something else');
    assert.equal(h.agent.status.lastReconcileOk, false, 'a reconcile that could not publish the node counts as failed');
    // The dataplane is still kept meanwhile: a peer lost on the machine (a restarted wireguard-go)
    // comes back from the cached cluster.
    await h.device.configure({ privateKey: h.privateKey, listenPort: peersBefore.listenPort, peers: [] });
    await h.agent.reconcileOnce();
    assert.deepEqual(
      (await h.device.read()).peers.map((p) => p.publicKey),
      peersBefore.peers.map((p) => p.publicKey),
    );

    // Meanwhile the cluster changed (the others kept checking in; a node joined).
    const now = Math.floor(h.clock.ms / 1000);
    for (const n of ['b', 'c'])
      h.api.patchNode(n, { metadata: { annotations: { [Annotation.lastSeen]: String(now) } } });
    h.api.addNode(
      node('d', {
        location: 'asia',
        endpoint: '203.0.113.4:51820',
        internalIP: '192.168.2.4/24',
        podCIDR: '10.42.3.0/24',
        lastSeen: now,
      }),
    );
    await h.api.restart();
    await eventually(
      'the node added during the outage is a peer',
      async () => (await h.peerKeys()).includes(wgKey('d')),
      15_000,
    );
    await eventually('the agent checked in again', () => kilo(h, 'a')[Annotation.lastSeen] === String(now));
    await eventually('the last reconcile succeeded', () => h.agent.status.lastReconcileOk);
    assert.deepEqual(await h.peerKeys(), [wgKey('c'), wgKey('d'), wgKey('laptop')].sort());
  });
});
