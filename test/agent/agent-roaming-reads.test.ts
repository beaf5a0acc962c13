/**
 * A roaming peer (behind NAT) handshakes after the pass that configured it, and nothing tells the
 * agent: with a routing monitor its passes trust the last write and read no WireGuard. Its learned
 * endpoint must still be read within seconds (roaming-reads.ts), not at the resync timer: until
 * then the plan dials the announced endpoint and withholds the route to an internal IP that is
 * that endpoint (the lab's NAT'd nodes showed "degraded" for it).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RoutingEvent } from '../../src/dataplane/monitor.js';
import { Annotation } from '../../src/model/annotations.js';
import { RoamingReads, roamingReadDelayMs, roamingReadsPerPeer } from '../../src/agent/roaming-reads.js';
import { newPeerState, type WireGuardState } from '../../src/wireguard/state.js';
import { NOW, node, peer, topologyFor, wgKey } from '../helpers/cluster.js';
import { eventually, settled, startHarness } from './agent-harness.js';

test('a NAT’d node’s first handshake is read within seconds with no event: the route to its internal IP follows', async (t) => {
  let emit = (_e: RoutingEvent): void => {};
  const watchRouting = (onEvent: (e: RoutingEvent) => void) => {
    emit = onEvent;
    return { stop: async () => {} };
  };
  // The harness's resync period is 10 minutes: only the roaming reads can find the handshake in time.
  const h = await startHarness(t, { deps: { watchRouting } });
  emit({ kind: 'ready' });
  // Behind NAT: it announces its internal IP as its endpoint and keeps its tunnel alive itself.
  h.api.addNode(
    node('nat', {
      location: 'asia',
      endpoint: '192.168.9.9:51820',
      internalIP: '192.168.9.9/24',
      podCIDR: '10.42.9.0/24',
      keepalive: 5,
    }),
  );
  const route = () =>
    h.kernel.routes.find((r) => r.protocol === 107 && r.type === 'unicast' && /^192\.168\.9\.9(\/32)?$/.test(r.dst));
  await eventually('nat is configured', async () =>
    (await h.device.read()).peers.some((p) => p.publicKey === wgKey('nat')),
  );
  await settled(h);
  assert.equal(route(), undefined, 'dialled at its internal IP, the route to that IP is withheld');
  const passesBefore = h.log.entries.length;
  // It handshakes from behind its NAT after the pass that configured it; nothing tells the agent.
  h.device.handshake(wgKey('nat'), NOW);
  h.device.learnEndpoint(wgKey('nat'), '198.18.9.1:40000');
  await eventually(
    'the learned endpoint is read and the route to its internal IP written',
    () => route() !== undefined,
    15_000,
  );
  const discovered = h.api.node('a')?.metadata?.annotations?.[Annotation.discoveredEndpoints] ?? '';
  assert.match(discovered, /198\.18\.9\.1/, 'the learned endpoint is published for the others');
  // What it waited for is WireGuard's alone: those passes read the device, not routes and firewall.
  const passes = h.log.entries.slice(passesBefore).filter((e) => e.msg === 'reconcile pass');
  assert.ok(
    passes.some((e) => e.obj['deviceRead'] === true),
    'a pass read the device',
  );
  assert.deepEqual(
    passes.filter((e) => e.obj['trustLastWrite'] !== true),
    [],
    'no full read of the machine for it',
  );
});

test('roaming reads: a second apart at first, then backing off, a bounded number per node, none once seen', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  let reads = 0;
  const r = new RoamingReads(() => reads++);
  const base = [
    node('a', {
      location: 'eu',
      endpoint: '198.51.100.1:51820',
      internalIP: '192.168.0.1/24',
      podCIDR: '10.42.0.0/24',
    }),
    node('phone', {
      location: 'asia',
      endpoint: '192.168.9.9:51820',
      internalIP: '192.168.9.9/24',
      podCIDR: '10.42.9.0/24',
      keepalive: 5,
    }),
  ];
  const t1 = topologyFor(base, 'a');
  const state = (key: string, handshake: number): WireGuardState => ({
    publicKey: null,
    listenPort: 51820,
    fwmark: 0,
    peers: [{ ...newPeerState(wgKey(key)), latestHandshake: handshake }],
  });
  // Each read's pass reports what it read: still no handshake.
  r.passed(t1, state('phone', 0), true);
  for (let i = 0; i < roamingReadsPerPeer + 2; i++) {
    const before = reads;
    t.mock.timers.tick(60_000);
    if (reads === before) break;
    r.passed(t1, state('phone', 0), true);
  }
  assert.equal(reads, roamingReadsPerPeer, 'a node that never handshakes costs a bounded number of reads');
  assert.deepEqual(
    Array.from({ length: roamingReadsPerPeer }, (_, i) => roamingReadDelayMs(i)),
    [1000, 1000, 1000, 1000, 1000, 2000, 4000, 8000, 16000],
  );

  // A new NAT'd node: read after a second; once a read sees its handshake, the armed read is dropped.
  const t2 = topologyFor(
    [
      ...base,
      node('tablet', {
        location: 'us',
        endpoint: '192.168.8.8:51820',
        internalIP: '192.168.8.8/24',
        podCIDR: '10.42.8.0/24',
        keepalive: 5,
      }),
    ],
    'a',
  );
  reads = 0;
  r.passed(t2, null, false);
  t.mock.timers.tick(999);
  assert.equal(reads, 0);
  t.mock.timers.tick(1);
  assert.equal(reads, 1);
  r.passed(t2, state('tablet', NOW), true);
  t.mock.timers.tick(60_000);
  assert.equal(reads, 0 + 1, 'a node seen handshaking is not read for again (and phone is out of reads)');

  // Roaming Peers are not read for: no route waits for their endpoint.
  const r2 = new RoamingReads(() => reads++);
  r2.passed(
    topologyFor(
      [base[0]!, peer('laptop', { allowedIPs: ['10.5.0.1/32'], endpoint: '192.0.2.7:51820', keepalive: 25 })],
      'a',
    ),
    null,
    false,
  );
  t.mock.timers.tick(60_000);
  assert.equal(reads, 1);
  // The NAT'd node itself: its own segment is no peer of its own.
  const r3 = new RoamingReads(() => reads++);
  r3.passed(topologyFor(base, 'phone'), null, false);
  t.mock.timers.tick(60_000);
  assert.equal(reads, 1, 'a NAT’d node reads for no handshake of its own');
  r.stop();
});
