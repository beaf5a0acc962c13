/**
 * The lab API server restarted on its state file goes on as a real one does after a restart
 * (etcd keeps objects and revision): the same objects, resourceVersions and uids, a revision
 * that only grows, and a watch resumed from before the restart refused with 410, after which
 * the real client library re-lists and carries on.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { KubernetesSource } from '../../src/backend/kubernetes/source.js';
import { TestApiServer } from '../../packages/lab/src/apiserver.js';
import { loadState, saveState } from '../../packages/lab/src/apiserver-state.js';
import { waitUntil } from '../fixtures/apiserver.js';
import { node } from '../helpers/cluster.js';
import { kubeConfigFor } from '../../packages/lab/src/apiserver-kubeconfig.js';

test('a restart on the state file keeps objects, resourceVersions, uids and the revision; clients re-list and go on', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kilo-lab-state-'));
  const file = join(dir, 'cluster.json');
  let api = await TestApiServer.start({ bookmarkIntervalMs: 100, onChange: () => saveState(file, api) });
  const source = new KubernetesSource({
    kubeConfig: kubeConfigFor(api),
    timings: { watchSilenceMs: 1_500, watchdogIntervalMs: 100, listTimeoutMs: 2_000, healthyWatchMs: 500 },
  });
  t.after(async () => {
    await source.stop();
    await api.close();
    rmSync(dir, { recursive: true, force: true });
  });
  api.addNode(node('a', { location: 'eu', endpoint: '198.51.100.1:51820', podCIDR: '10.2.0.0/24' }));
  api.addNode(node('b', { location: 'us', endpoint: '198.51.100.2:51820', podCIDR: '10.2.1.0/24' }));
  await source.start();
  const before = api.allObjects();
  const revision = Number(api.resourceVersion);
  const port = api.port;
  await api.close();

  const saved = loadState(file);
  assert.ok(saved, 'the state file exists');
  assert.equal(saved.revision, revision);
  api = await TestApiServer.start({ port, bookmarkIntervalMs: 100, ...saved, onChange: () => saveState(file, api) });
  assert.deepEqual(api.allObjects(), before, 'objects with their resourceVersions and uids');
  assert.equal(api.resourceVersion, String(revision));

  const gone = await fetch(`${api.url}/api/v1/nodes?watch=true&resourceVersion=${revision - 1}`);
  const first = (await gone.text()).split('\n')[0]!;
  assert.match(first, /"type":"ERROR".*"code":410/, 'a watch from before the restart: 410');

  api.addNode(node('c', { location: 'ap', endpoint: '198.51.100.3:51820', podCIDR: '10.2.2.0/24' }));
  const c = api.allObjects().find((o) => o.metadata?.name === 'c')!;
  assert.ok(Number(c.metadata?.resourceVersion) > revision, 'the revision goes on');
  const uids = new Set(api.allObjects().map((o) => (o.metadata as { uid?: string }).uid));
  assert.equal(uids.size, api.allObjects().length, 'no uid reused');
  await waitUntil(
    'the client sees the node created after the restart',
    () => source.objects().some((o) => o.metadata?.name === 'c'),
    20_000,
  );
});
