import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { PathMetrics } from '../../src/agent/health-metrics.js';
import { PathHealth } from '../../src/agent/path-health.js';
import { Prober } from '../../src/agent/health-prober.js';
import { formatPathHealth, maxListed, parsePathHealth } from '../../src/agent/health-summary.js';
import { pathTargets } from '../../src/agent/health-targets.js';
import { newPeerState, type WireGuardState } from '../../src/wireguard/state.js';
import { NOW, node, topologyFor, wgKey } from '../helpers/cluster.js';

const lab = (n2Location = 'loc1') => [
  node('loc1-n1', {
    location: 'loc1',
    internalIP: '192.168.1.11/24',
    endpoint: '198.18.1.11:51820',
    podCIDR: '10.42.1.0/24',
  }),
  node('loc1-n2', {
    location: n2Location,
    internalIP: '192.168.1.12/24',
    endpoint: '198.18.1.12:51820',
    podCIDR: '10.42.2.0/24',
  }),
  node('loc2-n1', {
    location: 'loc2',
    internalIP: '192.168.2.11/24',
    endpoint: '198.18.2.11:51820',
    podCIDR: '10.42.3.0/24',
  }),
  node('loc2-n2', {
    location: 'loc2',
    internalIP: '192.168.2.12/24',
    endpoint: '198.18.2.12:51820',
    podCIDR: '10.42.4.0/24',
  }),
];

function harness(answers: (address: string) => boolean) {
  const warnings: string[] = [];
  const pinged: string[] = [];
  let changes = 0;
  const prober = new Prober(
    (a) => {
      pinged.push(a);
      return Promise.resolve(answers(a));
    },
    { freshMs: 0 },
  );
  const health = new PathHealth({
    prober,
    mesh: { encapsulate: 'never', local: true },
    log: { warn: (_o, m) => warnings.push(m), info: () => {} },
    onChange: () => changes++,
    clock: () => NOW * 1000,
  });
  return { health, warnings, pinged, changes: () => changes };
}

test('the pairs a node is responsible for: mates in the clear, remote segments through WireGuard (a leader only)', () => {
  const cross = pathTargets(topologyFor(lab(), 'loc2-n1', { granularity: 'cross' }));
  assert.deepEqual(
    cross.map((p) => `${p.path} ${p.node} ${p.address}`),
    ['private loc2-n2 10.42.4.1', 'wireguard loc1-n1 10.42.1.1', 'wireguard loc1-n2 10.42.2.1'],
  );
  const follower = topologyFor(lab(), 'loc2-n2', { granularity: 'location' });
  assert.equal(follower.local.leader, false);
  assert.deepEqual(
    pathTargets(follower).map((p) => `${p.path} ${p.node}`),
    ['private loc2-n1'],
  );
});

test('a location mistake fails its pairs at once, from published data: degraded, warned once, published urgently', async () => {
  const h = harness(() => true);
  const t = topologyFor(lab('loc2'), 'loc2-n1', { granularity: 'cross' });
  h.health.planned(t, null);
  // The next pass's topology: the same mistake, said once.
  h.health.planned(topologyFor(lab('loc2'), 'loc2-n1', { granularity: 'cross' }), null);
  assert.equal(h.warnings.length, 1, 'the warning is said once');
  assert.match(
    h.warnings[0]!,
    /loc1-n2's internal IP 192\.168\.1\.12\/24 is not on loc2-n1's network 192\.168\.2\.0\/24/,
  );
  assert.match(h.health.degraded() ?? '', /^1 of 3 planned paths down: loc1-n2 \(private\): loc1-n2's internal IP/);
  assert.deepEqual(h.health.unreachable(), ['loc1-n2']);
  const first = h.health.publishable(undefined);
  assert.equal(first.urgent, true);
  assert.equal(h.health.publishable(first.value).urgent, false);
  await h.health.round();
  assert.ok(!h.pinged.includes('10.42.2.1'), 'a pair known broken is not probed');

  // Undone: the pair is gone from the failing ones, the warning may come again if made again.
  h.health.planned(topologyFor(lab(), 'loc2-n1', { granularity: 'cross' }), null);
  assert.equal(h.health.degraded(), null);
  assert.equal(h.health.publishable(first.value).urgent, true);
  h.health.planned(t, null);
  assert.equal(h.warnings.length, 2);

  // A reason longer than the annotation keeps is still the same once published.
  const long = 'x'.repeat(100);
  const far = topologyFor(
    lab('loc2').map((n) =>
      n.metadata?.name === 'loc1-n2' ? { ...n, metadata: { ...n.metadata, name: `loc1-n2${long}` } } : n,
    ),
    'loc2-n1',
    { granularity: 'cross' },
  );
  h.health.planned(far, null);
  const bounded = h.health.publishable(undefined);
  assert.equal(h.health.publishable(bounded.value).urgent, false);
});

test('a path whose probes go unanswered three times fails, with the handshake age; an answer mends it', async () => {
  let down = true;
  const h = harness((a) => !(down && a === '10.42.1.1'));
  const device: WireGuardState = {
    publicKey: null,
    listenPort: 51820,
    fwmark: 0,
    peers: [
      { ...newPeerState(wgKey('loc1-n1')), latestHandshake: NOW - 600 },
      { ...newPeerState(wgKey('loc1-n2')), latestHandshake: NOW - 5 },
      newPeerState(wgKey('loc2-n2')),
    ],
  };
  h.health.planned(topologyFor(lab(), 'loc2-n1', { granularity: 'cross' }), device);
  assert.deepEqual(h.health.summary().handshakes, { recent: 1, stale: 1, never: 1 });
  await h.health.round();
  await h.health.round();
  assert.equal(h.health.degraded(), null, 'two misses are not yet a failure');
  await h.health.round();
  assert.match(
    h.health.degraded() ?? '',
    /loc1-n1 \(wireguard\): loc1-n1's pods \(10\.42\.1\.1\) do not answer through WireGuard \(3 probes in a row; last handshake 600 s ago\)/,
  );
  assert.equal(h.changes(), 1);
  assert.deepEqual(h.health.summary().pairs, { ok: 2, failing: 1, unknown: 0 });
  down = false;
  await h.health.round();
  assert.equal(h.health.degraded(), null);
  assert.equal(h.changes(), 2);
});

test('the cost is bounded: at most perRound probes a round, suspects first, the rest round-robin', async () => {
  const objects = [];
  for (let i = 1; i <= 40; i++)
    objects.push(
      node(`n${i}`, {
        location: `l${i}`,
        internalIP: `10.0.${i}.1/24`,
        endpoint: `198.18.0.${i}:51820`,
        podCIDR: `10.42.${i}.0/24`,
      }),
    );
  const h = harness((a) => a !== '10.42.40.1');
  h.health.planned(topologyFor(objects, 'n1', { granularity: 'full' }), null);
  for (let r = 0; r < 13; r++) await h.health.round();
  assert.equal(h.pinged.length, 13 * 4);
  // 39 targets, 4 a round: every one probed within 10 rounds; the failing one every round once suspect.
  assert.equal(new Set(h.pinged).size, 39);
  assert.ok(h.pinged.slice(-8).filter((a) => a === '10.42.40.1').length >= 2);
  assert.match(h.health.degraded() ?? '', /^1 of 39 planned paths down: n40 \(wireguard\)/);
});

test('the prober shares a probe in flight and a fresh answer: the election and the paths send one packet', async () => {
  let sent = 0;
  let now = 0;
  const prober = new Prober(
    () => {
      sent++;
      return new Promise((r) => setTimeout(() => r(true), 5));
    },
    { freshMs: 1000, clock: () => now },
  );
  const host = prober.host({ ping: () => Promise.resolve(false) } as never);
  assert.deepEqual(await Promise.all([prober.probe('10.42.1.1'), host.ping('10.42.1.1')]), [true, true]);
  assert.equal(sent, 1);
  now = 500;
  await prober.probe('10.42.1.1');
  assert.equal(sent, 1);
  now = 1500;
  await prober.probe('10.42.1.1');
  assert.equal(sent, 2);
});

test('the annotation is bounded and reads back; a foreign value reads as none', () => {
  const failing = Array.from({ length: 20 }, (_, i) => ({
    node: `n${i}`,
    path: 'private' as const,
    reason: 'x'.repeat(1000),
  }));
  const text = formatPathHealth({
    pairs: { ok: 1, failing: 20, unknown: 0 },
    handshakes: { recent: 0, stale: 0, never: 0 },
    failing,
    more: 0,
  });
  assert.ok(text.length < 4096, `${text.length} characters`);
  const back = parsePathHealth(text)!;
  assert.equal(back.failing.length, maxListed);
  assert.equal(back.more, 12);
  assert.equal(parsePathHealth('not json'), null);
  assert.equal(parsePathHealth('42'), null);
});

test('the metrics are bounded: counts by state, and a series for at most 8 failing pairs', async () => {
  const registry = new Registry();
  const metrics = new PathMetrics(registry);
  const failing = Array.from({ length: 20 }, (_, i) => ({ node: `n${i}`, path: 'wireguard' as const, reason: 'r' }));
  metrics.judged(
    parsePathHealth(
      formatPathHealth({
        pairs: { ok: 5, failing: 20, unknown: 1 },
        handshakes: { recent: 3, stale: 2, never: 1 },
        failing,
        more: 0,
      }),
    )!,
  );
  metrics.probed('private', false);
  const text = await registry.metrics();
  assert.match(text, /^kilo_path_pairs\{state="failing"\} 20$/m);
  // Handshakes by age are metrics.ts's kilo_wireguard_peers{handshake}: not a second series here.
  assert.doesNotMatch(text, /handshake/);
  assert.match(text, /^kilo_path_probes_total\{path="private",result="failed"\} 1$/m);
  assert.equal(text.match(/^kilo_path_failing\{/gm)?.length, maxListed);
  metrics.judged({
    pairs: { ok: 1, failing: 0, unknown: 0 },
    handshakes: { recent: 0, stale: 0, never: 0 },
    failing: [],
    more: 0,
  });
  assert.doesNotMatch(await registry.metrics(), /^kilo_path_failing\{/m, 'a mended pair leaves no series');
});

test('a pair that keeps failing is one change, not one per round or pass: its reason’s counts are not its state', async () => {
  const h = harness((a) => a !== '10.42.4.1');
  const t = topologyFor(lab(), 'loc2-n1', { granularity: 'cross' });
  h.health.planned(t, null);
  for (let i = 0; i < 3; i++) await h.health.round();
  assert.equal(h.health.summary().pairs.failing, 1, 'loc2-n2 fails after three probes');
  const after = h.changes();
  assert.ok(after >= 1);
  // The agent's passes hand a new topology each time something else changes; the pair fails on.
  for (let i = 0; i < 5; i++) {
    await h.health.round();
    h.health.planned(topologyFor(lab(), 'loc2-n1', { granularity: 'cross' }), null);
  }
  assert.match(h.health.summary().failing[0]!.reason, /8 probes in a row/);
  assert.equal(h.changes(), after, 'no pass asked for while the failing set stays the same');
});
