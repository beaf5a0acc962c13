/**
 * The Kubernetes backend against the test API server, through the real @kubernetes/client-node
 * client: sync, changes, patches, and every way the API server misbehaves (410, outage, stalled
 * watches, 5xx) with short timings.
 */
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubernetesSource, normalizeNode } from '../../src/backend/kubernetes/source.js';
import type { BackoffOptions } from '../../src/backend/kubernetes/backoff.js';
import type { ReflectorTimings } from '../../src/backend/kubernetes/reflector.js';
import { parseCluster, type KubeObject } from '../../src/model/parse.js';
import { TestApiServer, waitUntil, type TestApiServerOptions } from '../fixtures/apiserver.js';
import { node, peer } from '../helpers/cluster.js';
import { kubeConfigFor } from '../../packages/lab/src/apiserver-kubeconfig.js';

const backoff: BackoffOptions = { initialMs: 50, maxMs: 400, factor: 2, jitter: 0.5 };

const fast: Partial<ReflectorTimings> = {
  resyncPeriodMs: 60_000,
  watchTimeoutSeconds: 30,
  watchSilenceMs: 1_500,
  watchdogIntervalMs: 100,
  listTimeoutMs: 2_000,
  healthyWatchMs: 500,
  backoff,
};

interface Setup {
  api: TestApiServer;
  source: KubernetesSource;
  /** onChange calls so far. */
  changes: () => number;
}

async function setup(
  t: TestContext,
  options: {
    timings?: Partial<ReflectorTimings>;
    server?: TestApiServerOptions;
    seed?: (api: TestApiServer) => void;
    nodeLabels?: readonly string[];
  } = {},
): Promise<Setup> {
  const api = await TestApiServer.start({ bookmarkIntervalMs: 200, ...options.server });
  const source = new KubernetesSource({
    kubeConfig: kubeConfigFor(api),
    timings: { ...fast, ...options.timings },
    ...(options.nodeLabels ? { nodeLabels: options.nodeLabels } : {}),
  });
  t.after(async () => {
    await source.stop();
    await api.close();
  });
  (options.seed ?? seedCluster)(api);
  let changes = 0;
  source.onChange(() => changes++);
  await source.start();
  // start() resolves after the lists; faults aimed at watches need the watches open first.
  await waitUntil('both watches are open', () => api.openWatches('nodes') === 1 && api.openWatches('peers') === 1);
  return { api, source, changes: () => changes };
}

function seedCluster(api: TestApiServer): void {
  api.addNode(
    node('a', { location: 'eu', endpoint: '198.51.100.1:51820', internalIP: '10.0.0.1/24', podCIDR: '10.2.0.0/24' }),
  );
  api.addNode(
    node('b', { location: 'eu', endpoint: '198.51.100.2:51820', internalIP: '10.0.0.2/24', podCIDR: '10.2.1.0/24' }),
  );
  api.addNode(
    node('c', { location: 'us', endpoint: '203.0.113.3:51820', internalIP: '10.1.0.3/24', podCIDR: '10.2.2.0/24' }),
  );
  api.addPeer(peer('laptop', { allowedIPs: ['10.5.0.1/32'] }));
  api.addPeer(peer('server', { allowedIPs: ['10.5.0.2/32'], endpoint: '192.0.2.9:51820' }));
}

function names(source: KubernetesSource, kind: 'Node' | 'Peer'): string[] {
  return source
    .objects()
    .filter((o) => o.kind === kind)
    .map((o) => o.metadata!.name!)
    .sort();
}

function find(source: KubernetesSource, kind: 'Node' | 'Peer', name: string): KubeObject | undefined {
  return source.objects().find((o) => o.kind === kind && o.metadata?.name === name);
}

function annotation(source: KubernetesSource, nodeName: string, key: string): string | undefined {
  return find(source, 'Node', nodeName)?.metadata?.annotations?.[key];
}

/**
 * The most requests one reflector can make in `windowMs` under `b`: every delay is at least
 * (1 − jitter) of its ceiling, and the ceilings grow from initialMs to maxMs.
 */
function maxAttemptsIn(windowMs: number, b: BackoffOptions): number {
  let attempts = 1;
  let elapsed = 0;
  for (let k = 0; ; k++) {
    const shortest = Math.min(b.maxMs, b.initialMs * b.factor ** k) * (1 - b.jitter);
    if (elapsed + shortest > windowMs) return attempts;
    elapsed += shortest;
    attempts++;
  }
}

describe('KubernetesSource against the test API server', () => {
  test('initial sync reads every Node and Peer, typed so parseCluster accepts them', async (t) => {
    const { source, api } = await setup(t);
    assert.equal(source.synced(), true);
    assert.ok(source.lastSync() > 0);
    assert.deepEqual(names(source, 'Node'), ['a', 'b', 'c']);
    assert.deepEqual(names(source, 'Peer'), ['laptop', 'server']);
    const parsed = parseCluster(source.objects());
    assert.deepEqual(
      parsed.errors.map((e) => e.message),
      [],
    );
    assert.deepEqual(parsed.nodes.map((n) => n.name).sort(), ['a', 'b', 'c']);
    assert.deepEqual(parsed.peers.map((p) => p.name).sort(), ['laptop', 'server']);
    assert.equal(find(source, 'Node', 'a')?.metadata?.resourceVersion, api.node('a')?.metadata?.resourceVersion);
    assert.equal(api.count('list-nodes'), 1);
    assert.equal(api.count('list-peers'), 1);
    // The first list may come from the API server's watch cache: cheap with an agent per node.
    assert.equal(api.queriesOf('list-nodes')[0]?.get('resourceVersion'), '0');
    const watch = api.queriesOf('watch-nodes')[0]!;
    assert.equal(watch.get('allowWatchBookmarks'), 'true');
    assert.equal(watch.get('resourceVersion'), api.resourceVersion, 'the watch starts where the list ended');
    const timeout = Number(watch.get('timeoutSeconds'));
    assert.ok(timeout >= 24 && timeout <= 36, `timeoutSeconds ${timeout} is 30 ± 20%`);
  });

  test('added, modified and deleted Nodes and Peers reach the cache and fire onChange', async (t) => {
    const { api, source, changes } = await setup(t);
    let before = changes();
    api.addNode(node('d', { location: 'us' }));
    await waitUntil('node d is seen', () => find(source, 'Node', 'd') !== undefined);
    assert.ok(changes() > before, 'onChange fired for the added node');

    before = changes();
    api.patchNode('b', { metadata: { annotations: { 'kilo.squat.ai/location': 'asia' } } });
    await waitUntil('node b moved to asia', () => annotation(source, 'b', 'kilo.squat.ai/location') === 'asia');
    assert.ok(changes() > before, 'onChange fired for the modified node');

    before = changes();
    api.deleteNode('c');
    await waitUntil('node c is gone', () => find(source, 'Node', 'c') === undefined);
    assert.ok(changes() > before, 'onChange fired for the deleted node');

    api.addPeer(peer('phone', { allowedIPs: ['10.5.0.3/32'] }));
    await waitUntil('peer phone is seen', () => find(source, 'Peer', 'phone') !== undefined);
    api.patchPeer('laptop', { spec: { allowedIPs: ['10.5.0.9/32'] } });
    await waitUntil('peer laptop has its new allowed IPs', () => {
      const spec = find(source, 'Peer', 'laptop')?.spec as { allowedIPs?: string[] } | undefined;
      return spec?.allowedIPs?.[0] === '10.5.0.9/32';
    });
    api.deletePeer('server');
    await waitUntil('peer server is gone', () => find(source, 'Peer', 'server') === undefined);

    assert.deepEqual(names(source, 'Node'), ['a', 'b', 'd']);
    assert.deepEqual(names(source, 'Peer'), ['laptop', 'phone']);
    assert.equal(api.count('list-nodes', 'list-peers'), 2, 'watch events alone, no relist');
  });

  test("a patch of the node's annotations lands on the server and comes back through the watch", async (t) => {
    const { api, source } = await setup(t);
    api.patchNode('a', { metadata: { annotations: { 'kilo.squat.ai/leader-health': 'x' } } });
    await waitUntil('stale annotation seen', () => annotation(source, 'a', 'kilo.squat.ai/leader-health') === 'x');

    await source.patchNodeAnnotations('a', {
      'kilo.squat.ai/endpoint': '198.51.100.7:51820',
      'kilo.squat.ai/leader-health': null,
    });
    const onServer = api.node('a')!.metadata!.annotations!;
    assert.equal(onServer['kilo.squat.ai/endpoint'], '198.51.100.7:51820');
    assert.equal('kilo.squat.ai/leader-health' in onServer, false, 'null deleted the key');
    assert.equal(onServer['kilo.squat.ai/location'], 'eu', 'other annotations untouched');
    assert.equal(api.count('patch-node'), 1);

    await waitUntil(
      'patched endpoint seen',
      () => annotation(source, 'a', 'kilo.squat.ai/endpoint') === '198.51.100.7:51820',
    );
    assert.equal(annotation(source, 'a', 'kilo.squat.ai/leader-health'), undefined);
  });

  test('a patch of a missing node fails naming the node and the status', async (t) => {
    const { source } = await setup(t);
    await assert.rejects(source.patchNodeAnnotations('ghost', { a: 'b' }), (e: Error) => {
      assert.match(e.message, /Node "ghost"/);
      assert.match(e.message, /HTTP 404/);
      return true;
    });
  });

  for (const goneAs of ['event', 'status'] as const) {
    test(`410 Gone (as ${goneAs === 'event' ? 'an ERROR event' : 'an HTTP status'}) after compaction relists and deletes what vanished`, async (t) => {
      const { api, source } = await setup(t, { server: { goneAs } });
      const deleted: string[] = [];
      let seen = new Set(names(source, 'Node'));
      source.onChange(() => {
        const now = new Set(names(source, 'Node'));
        for (const n of seen) if (!now.has(n)) deleted.push(n);
        seen = now;
      });
      const listsBefore = api.count('list-nodes');

      // Changes the watch cannot see, then compaction: resuming from the old version must fail.
      await api.stop();
      api.deleteNode('b');
      api.deletePeer('laptop');
      api.addNode(node('e', { location: 'us' }));
      api.compact();
      await api.restart();

      await waitUntil(
        'relisted after 410',
        () => find(source, 'Node', 'e') !== undefined && find(source, 'Peer', 'laptop') === undefined,
      );
      assert.deepEqual(names(source, 'Node'), ['a', 'c', 'e']);
      assert.deepEqual(names(source, 'Peer'), ['server']);
      assert.deepEqual(deleted, ['b'], 'the vanished node was deleted once');
      assert.ok(source.stats().nodes.gone >= 1, 'the 410 was recognised');
      assert.ok(api.count('list-nodes') > listsBefore, 'a relist happened');
      assert.equal(
        api.queriesOf('list-nodes').at(-1)?.get('resourceVersion'),
        '',
        'after 410 the relist is a consistent read',
      );

      api.addNode(node('f'));
      await waitUntil('watching again after the relist', () => find(source, 'Node', 'f') !== undefined);
    });
  }

  test('compaction under an open watch (ERROR 410 in the stream) relists without losing objects', async (t) => {
    const { api, source } = await setup(t);
    const listsBefore = api.count('list-nodes');
    let smallest = Infinity;
    source.onChange(() => (smallest = Math.min(smallest, source.objects().length)));
    api.compact();
    await waitUntil('nodes relisted', () => api.count('list-nodes') > listsBefore && source.stats().nodes.lists >= 2);
    api.addNode(node('g'));
    await waitUntil('node g seen after the relist', () => find(source, 'Node', 'g') !== undefined);
    assert.ok(smallest >= 5, `the cache never shrank (smallest ${smallest})`);
  });

  test('an API server away for a while: the cache keeps its objects, then converges', async (t) => {
    const { api, source } = await setup(t);
    await api.stop();
    api.deleteNode('a');
    api.patchNode('b', { metadata: { annotations: { 'kilo.squat.ai/location': 'moon' } } });
    api.addNode(node('h', { location: 'us' }));
    api.addPeer(peer('tablet', { allowedIPs: ['10.5.0.4/32'] }));

    let smallest = Infinity;
    const sampler = setInterval(() => (smallest = Math.min(smallest, source.objects().length)), 20);
    try {
      await sleep(2_000);
      assert.ok(source.stats().nodes.watchFailures + source.stats().nodes.listFailures >= 2, 'it kept trying');
      assert.deepEqual(names(source, 'Node'), ['a', 'b', 'c'], 'the old objects are kept while the server is away');
      assert.equal(annotation(source, 'b', 'kilo.squat.ai/location'), 'eu');
      assert.equal(source.synced(), true);

      await api.restart();
      await waitUntil(
        'converged',
        () => names(source, 'Node').join() === 'b,c,h' && find(source, 'Peer', 'tablet') !== undefined,
      );
      assert.equal(annotation(source, 'b', 'kilo.squat.ai/location'), 'moon');
    } finally {
      clearInterval(sampler);
    }
    assert.ok(smallest >= 5, `the cache was never emptied (smallest ${smallest})`);
  });

  test('a stalled watch is detected by the watchdog and replaced; later changes arrive', async (t) => {
    const { api, source } = await setup(t);
    api.stallWatches();
    api.addNode(node('late'));
    await waitUntil('the change made during the stall arrives', () => find(source, 'Node', 'late') !== undefined);
    assert.ok(source.stats().nodes.watchdogAborts >= 1, 'the watchdog replaced the silent watch');
    assert.equal(source.stats().nodes.resyncs, 0, 'not repaired by a resync');

    api.addNode(node('later'));
    await waitUntil('a change after the replacement arrives', () => find(source, 'Node', 'later') !== undefined);
    await waitUntil(
      'the stalled connections were closed, one watch each remains',
      () => api.openWatches('nodes') === 1 && api.openWatches('peers') === 1,
    );
  });

  test('bookmarks keep a quiet watch alive and advance lastSync', async (t) => {
    const { source } = await setup(t);
    const first = source.lastSync();
    await waitUntil('a bookmark advanced lastSync', () => source.lastSync() > first);
    await sleep(fast.watchSilenceMs! + 500);
    assert.equal(source.stats().nodes.watchdogAborts, 0, 'bookmarks count as life');
    assert.equal(source.stats().nodes.watches, 1, 'the one watch is still open');
  });

  for (const outage of ['connections reset', 'HTTP 503'] as const) {
    test(`backoff while the API server fails (${outage}): attempts stay bounded by the backoff`, async (t) => {
      const { api, source } = await setup(t);
      if (outage === 'connections reset') await api.stop('reset');
      else {
        // The open watches keep streaming; only new requests fail, as behind a sick load balancer.
        api.failRequests(503);
        api.dropWatches();
      }
      await sleep(100);
      api.resetCounts();
      const started = Date.now();
      await sleep(2_500);
      const attempts = api.count();
      const window = Date.now() - started;

      // Two reflectors; each may have one request in flight when the window opens.
      const bound = 2 * (maxAttemptsIn(window, backoff) + 1);
      assert.ok(attempts <= bound, `${attempts} attempts in ${window} ms, at most ${bound} allowed by the backoff`);
      assert.ok(attempts >= 4, `${attempts} attempts: it keeps retrying`);
      assert.deepEqual(names(source, 'Node'), ['a', 'b', 'c'], 'the cache is kept');

      if (outage === 'connections reset') await api.restart();
      else api.failRequests(null);
      api.addNode(node('back'));
      await waitUntil('recovered', () => find(source, 'Node', 'back') !== undefined);
    });
  }

  test('a periodic resync relists and repairs a change the watch missed', async (t) => {
    // A long silence threshold: only the resync can notice the stalled watch's missed change.
    const { api, source } = await setup(t, { timings: { resyncPeriodMs: 400, watchSilenceMs: 60_000 } });
    api.stallWatches();
    api.patchNode('c', { metadata: { annotations: { 'kilo.squat.ai/location': 'mars' } } });
    await waitUntil('the resync repaired node c', () => annotation(source, 'c', 'kilo.squat.ai/location') === 'mars');
    assert.ok(source.stats().nodes.resyncs >= 1);
    assert.equal(source.stats().nodes.watchdogAborts, 0);
    await waitUntil('resyncs keep coming', () => api.count('list-nodes') >= 4 && api.count('list-peers') >= 4);
  });

  test('start() waits for the API server and rejects when stopped first', async (t) => {
    const api = await TestApiServer.start();
    t.after(() => api.close());
    await api.stop();
    const source = new KubernetesSource({ kubeConfig: kubeConfigFor(api), timings: fast });
    const started = source.start();
    await sleep(300);
    assert.equal(source.synced(), false);
    await source.stop();
    await assert.rejects(started, /stopped before/);
  });

  test('start() resolves once a late API server answers', async (t) => {
    const api = await TestApiServer.start();
    await api.stop();
    const source = new KubernetesSource({ kubeConfig: kubeConfigFor(api), timings: fast });
    t.after(async () => {
      await source.stop();
      await api.close();
    });
    api.addNode(node('only'));
    const started = source.start();
    await sleep(300);
    await api.restart();
    await started;
    assert.deepEqual(names(source, 'Node'), ['only']);
  });
});

describe('what the agent keeps of a Node', () => {
  /** A Node as kubelet and Kilo leave it: most of it is not Kilo's. */
  const kubeletNode = (name: string): KubeObject => {
    const n = node(name, { location: 'eu', endpoint: '198.51.100.1:51820', podCIDR: '10.2.0.0/24' });
    n.metadata!.labels = {
      'topology.kubernetes.io/region': 'eu',
      'kubernetes.io/os': 'linux',
      'node.kubernetes.io/instance-type': 'm5',
    };
    Object.assign(n.metadata!.annotations!, { 'node.alpha.kubernetes.io/ttl': '0', 'volumes.kubernetes.io/x': 'y' });
    n.spec = {
      ...n.spec,
      podCIDRs: ['10.2.0.0/24'],
      providerID: 'aws:///i-1',
      taints: [{ key: 'k', effect: 'NoSchedule' }],
    };
    return n;
  };

  test("Kilo's annotations, the topology label and spec.podCIDR(s) only, listed and watched", async (t) => {
    const { api, source } = await setup(t, {
      seed: (a) => a.addNode(kubeletNode('a')),
      nodeLabels: ['topology.kubernetes.io/region'],
    });
    const check = (name: string) => {
      const o = find(source, 'Node', name)!;
      assert.deepEqual(Object.keys(o.metadata!.labels!), ['topology.kubernetes.io/region']);
      assert.ok(Object.keys(o.metadata!.annotations!).every((k) => k.startsWith('kilo.squat.ai/')));
      assert.ok(o.metadata!.annotations!['kilo.squat.ai/endpoint'], 'the endpoint is kept');
      assert.deepEqual(o.spec, { podCIDR: '10.2.0.0/24', podCIDRs: ['10.2.0.0/24'] });
    };
    check('a');
    api.addNode(kubeletNode('b'));
    await waitUntil('node b is seen', () => find(source, 'Node', 'b') !== undefined);
    check('b');
    assert.deepEqual(
      parseCluster(source.objects(), { topologyLabel: 'topology.kubernetes.io/region' }).nodes.map((n) => n.location),
      ['eu', 'eu'],
    );
  });

  test("a heartbeat's object shares what did not change with the one it replaces, and equals a fresh one", () => {
    const normalize = normalizeNode(['topology.kubernetes.io/region']);
    const raw = kubeletNode('a');
    const before = normalize(raw)!;
    const beat = structuredClone(raw);
    beat.metadata!.annotations!['kilo.squat.ai/last-seen'] = '1764662430';
    beat.metadata!.resourceVersion = '8';
    const after = normalize(beat, before)!;
    assert.deepEqual(after, normalize(beat), 'the same object as without the previous one');
    assert.equal(after.metadata!.labels, before.metadata!.labels, 'the labels are the previous object');
    assert.equal(after.spec, before.spec, 'so is the spec');
    assert.notEqual(after.metadata!.annotations, before.metadata!.annotations, 'last-seen moved: new annotations');
    assert.equal(
      before.metadata!.annotations!['kilo.squat.ai/last-seen'],
      String(raw.metadata!.annotations!['kilo.squat.ai/last-seen']),
      'the previous object is left as it was',
    );
    // A change anywhere else is taken, not the previous value.
    const moved = structuredClone(beat);
    moved.metadata!.labels!['topology.kubernetes.io/region'] = 'us';
    moved.spec!['podCIDR'] = '10.3.0.0/24';
    moved.metadata!.annotations!['kilo.squat.ai/endpoint'] = '198.51.100.2:51820';
    assert.deepEqual(normalize(moved, after), normalize(moved));
    const gone = structuredClone(beat);
    delete gone.metadata!.annotations!['kilo.squat.ai/endpoint'];
    assert.deepEqual(normalize(gone, after), normalize(gone));
    // A second family's pod CIDR, added to the same podCIDR, is a new spec too.
    const dual = structuredClone(beat);
    dual.spec!['podCIDRs'] = ['10.2.0.0/24', 'fd42::/64'];
    assert.deepEqual(normalize(dual, after)!.spec, { podCIDR: '10.2.0.0/24', podCIDRs: ['10.2.0.0/24', 'fd42::/64'] });
    const single = structuredClone(beat);
    delete single.spec!['podCIDRs'];
    assert.deepEqual(normalize(single, after)!.spec, { podCIDR: '10.2.0.0/24' });
  });
});
