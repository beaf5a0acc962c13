/**
 * LeaseElection end to end in memory: three agents of one location (a mini control loop each:
 * plan with the elected leaders, publish the follower's report as its annotation) on one Lease
 * board, a remote location's leader, and pings answered or not by a fake Host. Real timers
 * with short intervals; every wait is for a condition, not a duration.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { silentLogger } from '../../src/backend/source.js';
import { FakeHost } from '../../src/dataplane/host/fake.js';
import { FakeKernel } from '../../src/dataplane/routes/fake.js';
import { LeaseElection } from '../../src/election/leader-election.js';
import { leaseName } from '../../src/election/lease-name.js';
import { LeaseBoard } from '../../src/backend/memory-leases.js';
import { ElectionMetrics } from '../../src/election/metrics.js';
import { topologyOf } from '../../src/mesh/compute.js';
import { Annotation } from '../../src/model/annotations.js';
import type { KubeObject } from '../../src/model/parse.js';
import { NOW, meshOptions, node, parsed } from '../helpers/cluster.js';
import { waitUntil as until } from '../../packages/lab/src/apiserver.js';

const timing = { durationMs: 2_000, renewMs: 100, skewMs: 100 };
const names = ['eu-1', 'eu-2', 'eu-3'];
const remotePodGateway = '10.43.1.1';

/** Who answers a ping from `from` to `to` while `leader` holds the Lease. */
type Answers = (from: string, to: string, leader: string | null) => boolean;

/**
 * The host of agent `from`: kilo0 and a default route (so the kernel would forward relayed
 * packets), forwarding on, pings answered when `answers` says so.
 */
function hostOf(from: string, answers: Answers, leader: () => string | null): FakeHost {
  const m = new FakeKernel();
  m.addLink('eth0', { addresses: ['10.0.0.254/24'] });
  m.addLink('kilo0', {});
  m.routeAdd({
    family: 4,
    dst: '0.0.0.0/0',
    table: 254,
    metric: 0,
    gw: '10.0.0.1',
    dev: 'eth0',
    src: null,
    onlink: false,
    type: 'unicast',
    protocol: 3,
  });
  const host = new FakeHost(m);
  host.answers = (to) => answers(from, to, leader());
  return host;
}

function location(answers: Answers) {
  const objects = new Map<string, KubeObject>();
  names.forEach((name, i) =>
    objects.set(
      name,
      node(name, {
        location: 'eu',
        internalIP: `10.0.0.${i + 1}/24`,
        endpoint: `198.51.100.${i + 1}:51820`,
        podCIDR: `10.42.${i + 1}.0/24`,
      }),
    ),
  );
  objects.set(
    'far-1',
    node('far-1', {
      location: 'far',
      internalIP: '10.1.0.1/24',
      endpoint: '203.0.113.1:51820',
      podCIDR: '10.43.1.0/24',
    }),
  );
  const board = new LeaseBoard();
  const logs: string[] = [];
  const holder = () => board.leases.get(leaseName('eu'))?.holder ?? null;
  const agents = new Map<string, LeaseElection>();
  const plan = (name: string) => {
    const e = agents.get(name)!;
    const cluster = parsed([...objects.values()]);
    const leaders = e.leaders(cluster.nodes, cluster.nodes.find((n) => n.name === name) ?? null);
    e.reconciled(true, topologyOf(cluster, name, meshOptions({ granularity: 'location' }), NOW, leaders));
    // Publish the report; a changed Node makes every agent plan again, as the watch would.
    const o = objects.get(name)!;
    const annotations = { ...o.metadata!.annotations };
    const report = e.report();
    if ((annotations[Annotation.leaderHealth] ?? null) === report) return;
    if (report === null) delete annotations[Annotation.leaderHealth];
    else annotations[Annotation.leaderHealth] = report;
    objects.set(name, { ...o, metadata: { ...o.metadata, annotations } });
    for (const other of agents.keys()) queueMicrotask(() => plan(other));
  };
  const start = async (name: string) => {
    const e = new LeaseElection({
      api: board.client(),
      host: hostOf(name, answers, holder),
      identity: name,
      interfaceName: 'kilo0',
      timing,
      log: {
        ...silentLogger,
        info: (o, msg) => logs.push(`${name}: ${msg} ${JSON.stringify(o)}`),
        warn: (o, msg) => logs.push(`${name}: ${msg} ${JSON.stringify(o)}`),
      },
      metrics: new ElectionMetrics(new Registry()),
      probeIntervalMs: 20,
    });
    agents.set(name, e);
    await e.start(() => queueMicrotask(() => plan(name)));
    plan(name);
  };
  return {
    board,
    logs,
    agents,
    start,
    holder,
    report: (name: string) => objects.get(name)!.metadata!.annotations?.[Annotation.leaderHealth] ?? null,
    stop: () => Promise.all([...agents.values()].map((e) => e.stop())),
  };
}

describe('LeaseElection: followers probe through their leader', () => {
  test('a leader that drops forwarded packets (FORWARD DROP) resigns on its followers’ reports and stays out', async () => {
    // eu-1's FORWARD chain drops everything: while it leads, its followers' pings to the far side
    // die there; its own pings (to followers and to the far side) start on it and get through.
    let dropping = false;
    const loc = location(
      (from, to, leader) => !(dropping && leader === 'eu-1' && from !== 'eu-1' && to === remotePodGateway),
    );
    try {
      await loc.start('eu-1');
      await until('eu-1 holds the Lease', () => loc.holder() === 'eu-1');
      await loc.start('eu-2');
      await loc.start('eu-3');
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(loc.holder(), 'eu-1', 'healthy: followers do not complain');
      assert.equal(loc.report('eu-2'), null);

      dropping = true;
      await until('a follower took the Lease', () => loc.holder() === 'eu-2' || loc.holder() === 'eu-3');
      const resigned = loc.logs.find((l) => l.startsWith('eu-1: gave up the location Lease'));
      assert.match(resigned ?? '', /followers' probes through this node fail: eu-2, eu-3/);
      // The reports were about eu-1's term; under the new leader they are withdrawn.
      await until('the reports are withdrawn', () => loc.report('eu-2') === null && loc.report('eu-3') === null);
      const newLeader = loc.holder();
      // eu-1 must not take the Lease back while the new leader holds it (several Lease durations).
      await new Promise((r) => setTimeout(r, 3 * timing.durationMs));
      assert.equal(loc.holder(), newLeader, 'no flapping back');
    } finally {
      await loc.stop();
    }
  });

  test('followers that cannot reach the far side while the leader cannot either do not unseat it', async () => {
    // The far location is gone: everybody's pings to it fail. That is not eu-1's forwarding.
    let farDown = false;
    const loc = location((_, to) => !(farDown && to === remotePodGateway));
    try {
      await loc.start('eu-1');
      await until('eu-1 holds the Lease', () => loc.holder() === 'eu-1');
      await loc.start('eu-2');
      await loc.start('eu-3');
      farDown = true;
      await until('both followers report', () => loc.report('eu-2') !== null && loc.report('eu-3') !== null);
      await new Promise((r) => setTimeout(r, 1_000));
      assert.equal(loc.holder(), 'eu-1');
      assert.ok(!loc.logs.some((l) => l.startsWith('eu-1: gave up')), loc.logs.join('\n'));
    } finally {
      await loc.stop();
    }
  });

  test('a follower that is down does not count: one follower reporting out of one that answers is most', async () => {
    let dropping = false;
    // eu-3 is down: it answers nobody and runs no agent.
    const loc = location(
      (from, to, leader) =>
        to !== '10.42.3.1' && !(dropping && leader === 'eu-1' && from !== 'eu-1' && to === remotePodGateway),
    );
    try {
      await loc.start('eu-1');
      await until('eu-1 holds the Lease', () => loc.holder() === 'eu-1');
      await loc.start('eu-2');
      dropping = true;
      await until('eu-2 took the Lease', () => loc.holder() === 'eu-2');
    } finally {
      await loc.stop();
    }
  });
});
