import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { TestApiServer } from '../../packages/lab/src/apiserver.js';
import { LabApiClient } from '../../packages/lab/src/client.js';

test('the lab API server takes creates, merge patches and deletes of Nodes and Peers over its Unix socket, and reports each change', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kilo-lab-api-'));
  let changes = 0;
  const api = await TestApiServer.start({ socketPath: join(dir, 'api.sock'), onChange: () => changes++ });
  t.after(async () => {
    await api.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const client = new LabApiClient(join(dir, 'api.sock'));
  await client.waitReady();

  await client.create('nodes', {
    metadata: { name: 'a', labels: { 'topology.kubernetes.io/region': 'loc1' } },
    spec: { podCIDR: '10.42.1.0/24' },
  });
  await assert.rejects(client.create('nodes', { metadata: { name: 'a' } }), /409 nodes "a" already exists/);
  await client.patch('nodes', 'a', { metadata: { annotations: { 'kilo.squat.ai/persistent-keepalive': '5' } } });
  await client.create('peers', { metadata: { name: 'p' }, spec: { allowedIPs: ['10.5.0.1/32'] } });
  assert.deepEqual(api.node('a')?.metadata?.annotations, { 'kilo.squat.ai/persistent-keepalive': '5' });
  assert.equal(
    (api.node('a') as { spec?: { podCIDR?: string } }).spec?.podCIDR,
    '10.42.1.0/24',
    'a patch keeps what it does not name',
  );
  assert.deepEqual(
    (await client.list('peers')).map((p) => p.metadata?.name),
    ['p'],
  );

  await client.delete('peers', 'p');
  await assert.rejects(client.delete('peers', 'p'), /404 peers "p" not found/);
  assert.deepEqual(api.peerNames(), []);
  assert.equal(changes, 4, 'create, patch, create, delete');
  assert.deepEqual(
    api
      .allObjects()
      .filter((o) => o.kind === 'Node' || o.kind === 'Peer')
      .map((o) => `${o.kind} ${o.metadata?.name}`),
    ['Node a'],
  );
});

test('the lab API server starts with the objects it is given (a restarted lab keeps its cluster)', async (t) => {
  const api = await TestApiServer.start({
    objects: [
      { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n' } },
      { apiVersion: 'kilo.squat.ai/v1alpha1', kind: 'Peer', metadata: { name: 'p' } },
    ],
  });
  t.after(() => api.close());
  assert.deepEqual([api.nodeNames(), api.peerNames()], [['n'], ['p']]);
});
