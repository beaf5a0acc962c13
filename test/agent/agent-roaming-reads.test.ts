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
import { NOW, peer, wgKey } from '../helpers/cluster.js';
import { eventually, settled, startHarness } from './agent-harness.js';

test('a roaming peer’s first handshake is read within seconds with no event: its learned endpoint is published', async (t) => {
  let emit = (_e: RoutingEvent): void => {};
  const watchRouting = (onEvent: (e: RoutingEvent) => void) => {
    emit = onEvent;
    return { stop: async () => {} };
  };
  // The harness's resync period is 10 minutes: only the roaming reads can find the handshake in time.
  const h = await startHarness(t, { deps: { watchRouting } });
  emit({ kind: 'ready' });
  h.api.addPeer(peer('phone', { allowedIPs: ['10.5.0.7/32'], endpoint: '192.0.2.7:51820', keepalive: 25 }));
  await eventually('phone is configured', async () =>
    (await h.device.read()).peers.some((p) => p.publicKey === wgKey('phone')),
  );
  await settled(h);
  const discovered = () => h.api.node('a')?.metadata?.annotations?.[Annotation.discoveredEndpoints] ?? '';
  assert.doesNotMatch(discovered(), /198\.18\.2\.1/);
  // It handshakes from behind a NAT after the pass that configured it.
  h.device.handshake(wgKey('phone'), NOW);
  h.device.learnEndpoint(wgKey('phone'), '198.18.2.1:40000');
  await eventually('the learned endpoint is published as discovered', () => /198\.18\.2\.1/.test(discovered()), 15_000);
});

test('roaming reads: a second apart at first, then backing off, a bounded number per peer, none once seen', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  let reads = 0;
  const r = new RoamingReads(() => reads++);
  const keys = new Set([wgKey('phone')]);
  const state = (handshake: number): WireGuardState => ({
    publicKey: null,
    listenPort: 51820,
    fwmark: 0,
    peers: [{ ...newPeerState(wgKey('phone')), latestHandshake: handshake }],
  });
  // Each read's pass reports what it read: still no handshake.
  const delays: number[] = [];
  r.passed(keys, state(0), true);
  for (let i = 0; i < roamingReadsPerPeer + 2; i++) {
    const before = reads;
    t.mock.timers.tick(60_000);
    if (reads === before) break;
    r.passed(keys, state(0), true);
  }
  for (let i = 0; i < roamingReadsPerPeer; i++) delays.push(roamingReadDelayMs(i));
  assert.equal(reads, roamingReadsPerPeer, 'a peer that never handshakes costs a bounded number of reads');
  assert.deepEqual(delays, [1000, 1000, 1000, 1000, 1000, 2000, 4000, 8000, 16000]);

  // A new peer: read after a second; once a read sees its handshake, the armed read is dropped.
  const other = new Set([wgKey('tablet')]);
  reads = 0;
  r.passed(other, null, false);
  t.mock.timers.tick(999);
  assert.equal(reads, 0);
  t.mock.timers.tick(1);
  assert.equal(reads, 1);
  r.passed(other, null, true);
  r.passed(other, { ...state(0), peers: [{ ...newPeerState(wgKey('tablet')), latestHandshake: NOW }] }, true);
  t.mock.timers.tick(60_000);
  assert.equal(reads, 1, 'a peer seen handshaking is not read for again');
  r.stop();
});
