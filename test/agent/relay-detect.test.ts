import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { Prober } from '../../src/agent/health-prober.js';
import { PathHealth } from '../../src/agent/path-health.js';
import { directPathSeconds, handshakeProvesPath } from '../../src/agent/relay-detect.js';
import { RelayWatch } from '../../src/agent/relay-watch.js';
import { planNode } from '../../src/mesh/plan.js';
import { Annotation } from '../../src/model/annotations.js';
import { newPeerState, type WireGuardState } from '../../src/wireguard/state.js';
import { NOW, meshOptions, node, topologyFor, wgKey } from '../helpers/cluster.js';

const kiloTs = { [Annotation.meshFlags]: '{"port":51820}' };
const spec = (name: string, loc: string, i: number, extra: Record<string, string> = {}) =>
  node(name, {
    location: loc,
    internalIP: `192.168.${i}.1/24`,
    endpoint: `198.18.${i}.1:51820`,
    podCIDR: `10.42.${i}.0/24`,
    annotations: { ...kiloTs, ...extra },
  });
const lab = (unreachable: Record<string, string> = {}) =>
  [
    ['a', 'loc1', 1],
    ['b', 'loc2', 2],
    ['r', 'loc3', 3],
  ].map(([n, l, i]) =>
    spec(
      n as string,
      l as string,
      i as number,
      unreachable[n as string] ? { [Annotation.unreachable]: unreachable[n as string]! } : {},
    ),
  );
const cross = { granularity: 'cross' as const };

function harness(answers: (address: string) => boolean, now = () => NOW * 1000) {
  const pinged: string[] = [];
  const prober = new Prober(
    (a) => {
      pinged.push(a);
      return Promise.resolve(answers(a));
    },
    { freshMs: 0, clock: now },
  );
  const health = new PathHealth({
    prober,
    mesh: { encapsulate: 'never', local: true },
    log: { warn: () => {}, info: () => {} },
    clock: now,
  });
  return { health, pinged };
}

const device = (handshakes: Record<string, number>): WireGuardState => ({
  publicKey: null,
  listenPort: 51820,
  fwmark: 0,
  peers: Object.entries(handshakes).map(([n, at]) => ({ ...newPeerState(wgKey(n)), latestHandshake: at })),
});

test("WireGuard's timers: a handshake within REKEY_TIMEOUT + KEEPALIVE_TIMEOUT proves the path", () => {
  assert.equal(directPathSeconds, 15);
  assert.equal(handshakeProvesPath(0, NOW), false);
  assert.equal(handshakeProvesPath(NOW - 15, NOW), true);
  assert.equal(handshakeProvesPath(NOW - 16, NOW), false);
});

test('a peer is unreachable after three unanswered probes and no recent handshake; a recent handshake vetoes', async () => {
  const h = harness((a) => a !== '10.42.2.1');
  h.health.planned(topologyFor(lab(), 'a', cross), device({ b: NOW - 600, r: NOW - 5 }));
  for (let i = 0; i < 3; i++) await h.health.round();
  assert.deepEqual(h.health.unreachablePeers(), ['b']);
  // Probes unanswered but the peer's handshakes arrive: not a path a relay mends.
  const v = harness((a) => a !== '10.42.2.1');
  v.health.planned(topologyFor(lab(), 'a', cross), device({ b: NOW - 3, r: NOW - 5 }));
  for (let i = 0; i < 3; i++) await v.health.round();
  assert.deepEqual(v.health.unreachablePeers(), []);
});

test('a failing pair whose handshake still vetoes is asked about again once the handshake is too old, not at the next check-in', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  let now = NOW;
  let changes = 0;
  const prober = new Prober((a) => Promise.resolve(a !== '10.42.2.1'), { freshMs: 0, clock: () => now * 1000 });
  const health = new PathHealth({
    prober,
    mesh: { encapsulate: 'never', local: true },
    log: { warn: () => {}, info: () => {} },
    clock: () => now * 1000,
    onChange: () => changes++,
  });
  t.after(() => health.stop());
  // b's last handshake 5 s ago: it vetoes for another 10 s.
  health.planned(topologyFor(lab(), 'a', cross), device({ b: NOW - 5, r: NOW - 5 }));
  for (let i = 0; i < 3; i++) await health.round();
  const before = changes;
  assert.deepEqual(health.unreachablePeers(), []);
  now = NOW + 10;
  t.mock.timers.tick(10_000);
  assert.equal(changes, before, 'not yet: the handshake is 15 s old');
  now = NOW + 11;
  t.mock.timers.tick(1000);
  assert.equal(changes, before + 1, 'asked again once the handshake no longer proves the path');
  assert.deepEqual(health.unreachablePeers(), ['b']);
  t.mock.timers.tick(60_000);
  assert.equal(changes, before + 1, 'nothing more to wait for');
});

test('a restarted agent keeps what its Node published until its probes judge the pair', async () => {
  let blocked = true;
  const h = harness((addr) => !(blocked && addr === '10.4.0.2'));
  assert.deepEqual(h.health.unreachablePeers(['b']), ['b'], 'the first pass publishes before it plans');
  h.health.planned(topologyFor(lab({ a: 'b' }), 'a', cross), device({ b: 0, r: NOW - 5 }));
  assert.deepEqual(h.health.unreachablePeers(['b', 'r']).sort(), ['b', 'r'], 'not probed yet: as published');
  assert.deepEqual(h.health.unreachablePeers([]), [], 'nothing published, nothing kept');
  await h.health.round();
  assert.equal(h.pinged[0], '10.4.0.2', 'the kept pair is probed first');
  assert.deepEqual(h.health.unreachablePeers(['b', 'r']), ['b'], 'r answered; b has one failure, still as published');
  for (let i = 0; i < 2; i++) await h.health.round();
  assert.deepEqual(h.health.unreachablePeers([]), ['b'], 'judged by its own probes now');
  blocked = false;
  await h.health.round();
  assert.deepEqual(h.health.unreachablePeers(['b']), []);
});

test('a relayed pair is probed at its WireGuard IP (the direct entry), and comes back when that answers', async () => {
  let blocked = true;
  // WireGuard IPs by key order: a .1, b .2, r .3.
  const h = harness((addr) => !(blocked && (addr === '10.42.2.1' || addr === '10.4.0.2')));
  h.health.planned(topologyFor(lab({ a: 'b' }), 'a', cross), device({ b: 0, r: NOW - 5 }));
  for (let i = 0; i < 3; i++) await h.health.round();
  assert.ok(h.pinged.includes('10.4.0.2'));
  assert.ok(!h.pinged.includes('10.42.2.1'), 'never the pod address, which the relay answers for');
  assert.deepEqual(h.health.unreachablePeers(), ['b']);
  blocked = false;
  await h.health.round();
  assert.deepEqual(h.health.unreachablePeers(), []);
});

test('the relay watch logs a pair going through a relay and coming back, and counts pairs by role', async () => {
  const lines: string[] = [];
  const registry = new Registry();
  const w = new RelayWatch(
    'a',
    { info: (_o, m) => lines.push(m), warn: (_o, m) => lines.push(`warn: ${m}`) },
    registry,
  );
  const options = meshOptions(cross);
  w.observe(planNode(topologyFor(lab({ b: 'a' }), 'a', cross), options));
  assert.match(await registry.getSingleMetricAsString('kilo_relayed_pairs'), /kilo_relayed_pairs\{role="end"\} 1/);
  w.observe(planNode(topologyFor(lab(), 'a', cross), options));
  assert.deepEqual(lines, [
    'a and b cannot reach each other directly: through r',
    'a and b reach each other directly again',
  ]);
  assert.match(await registry.getSingleMetricAsString('kilo_relayed_pairs'), /kilo_relayed_pairs\{role="end"\} 0/);
});
