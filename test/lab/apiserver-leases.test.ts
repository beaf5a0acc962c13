import assert from 'node:assert/strict';
import { request } from 'node:http';
import { test } from 'node:test';
import { CoordinationV1Api, CoreV1Api, V1MicroTime, Watch, type V1Lease } from '@kubernetes/client-node';
import { TestApiServer, leasesType, waitUntil } from '../../packages/lab/src/apiserver.js';
import { statusCodeOf } from '../../src/backend/kubernetes/errors.js';
import { kubeConfigFor } from '../../packages/lab/src/apiserver-kubeconfig.js';

const lease = (name: string, holder: string): V1Lease => ({
  metadata: { name, namespace: 'kube-system' },
  spec: { holderIdentity: holder, leaseDurationSeconds: 10, renewTime: new V1MicroTime(Date.now()) },
});

async function code(p: Promise<unknown>): Promise<number | undefined> {
  try {
    await p;
    return 200;
  } catch (e) {
    return statusCodeOf(e);
  }
}

test('the lab API server keeps Leases as kube-apiserver does, through @kubernetes/client-node', async (t) => {
  const api = await TestApiServer.start();
  t.after(() => api.close());
  const client = kubeConfigFor(api).makeApiClient(CoordinationV1Api);
  const namespace = 'kube-system';

  const created = await client.createNamespacedLease({ namespace, body: lease('kilo-leader-a', 'n1') });
  assert.equal(created.spec?.holderIdentity, 'n1');
  assert.ok(created.metadata?.resourceVersion);
  assert.ok(created.metadata?.uid);
  assert.equal(
    await code(client.createNamespacedLease({ namespace, body: lease('kilo-leader-a', 'n2') })),
    409,
    'a second create is AlreadyExists',
  );

  // Optimistic concurrency: an update from a stale read loses.
  const read = await client.readNamespacedLease({ name: 'kilo-leader-a', namespace });
  const renewed = await client.replaceNamespacedLease({
    name: 'kilo-leader-a',
    namespace,
    body: { ...read, spec: { ...read.spec, renewTime: new V1MicroTime(Date.now()) } },
  });
  assert.notEqual(renewed.metadata?.resourceVersion, read.metadata?.resourceVersion);
  assert.equal(
    await code(
      client.replaceNamespacedLease({
        name: 'kilo-leader-a',
        namespace,
        body: { ...read, spec: { ...read.spec, holderIdentity: 'n2' } },
      }),
    ),
    409,
    'stale resourceVersion is Conflict',
  );
  assert.equal((api.get(leasesType, namespace, 'kilo-leader-a') as V1Lease).spec?.holderIdentity, 'n1');

  assert.equal(await code(client.readNamespacedLease({ name: 'nope', namespace })), 404);
  assert.equal(await code(client.readNamespacedLease({ name: 'kilo-leader-a', namespace: 'other' })), 404);
  // kube-apiserver's validation: a name must be a DNS-1123 subdomain, a MicroTime has microseconds.
  assert.equal(await code(client.createNamespacedLease({ namespace, body: lease('Bad_Name', 'n1') })), 422);
  const millis = { ...lease('kilo-leader-b', 'n1'), spec: { renewTime: new Date() } };
  assert.equal(await code(client.createNamespacedLease({ namespace, body: millis })), 422);
  const zero = { ...lease('kilo-leader-b', 'n1'), spec: { leaseDurationSeconds: 0 } };
  assert.equal(await code(client.createNamespacedLease({ namespace, body: zero })), 422);

  const list = await client.listNamespacedLease({ namespace });
  assert.deepEqual(
    list.items.map((l) => l.metadata?.name),
    ['kilo-leader-a'],
  );
  assert.equal((await client.listNamespacedLease({ namespace: 'other' })).items.length, 0);

  // Watch from the list's version sees later changes only, in order, in this namespace only.
  const events: string[] = [];
  const watch = new Watch(kubeConfigFor(api));
  const controller = await watch.watch(
    `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`,
    { resourceVersion: list.metadata?.resourceVersion },
    (type, obj: V1Lease) => events.push(`${type} ${obj.metadata?.name} ${obj.spec?.holderIdentity ?? '-'}`),
    () => {},
  );
  t.after(() => controller.abort());
  // As in kube-apiserver, a namespace must exist before anything is created in it.
  await kubeConfigFor(api)
    .makeApiClient(CoreV1Api)
    .createNamespace({ body: { metadata: { name: 'other' } } });
  await client.createNamespacedLease({
    namespace: 'other',
    body: { ...lease('kilo-leader-c', 'x'), metadata: { name: 'kilo-leader-c', namespace: 'other' } },
  });
  const current = await client.readNamespacedLease({ name: 'kilo-leader-a', namespace });
  await client.replaceNamespacedLease({
    name: 'kilo-leader-a',
    namespace,
    body: { ...current, spec: { ...current.spec, holderIdentity: 'n2' } },
  });
  await client.deleteNamespacedLease({ name: 'kilo-leader-a', namespace });
  await waitUntil('the watch saw the update and the delete', () => events.length >= 2);
  assert.deepEqual(events, ['MODIFIED kilo-leader-a n2', 'DELETED kilo-leader-a n2']);
});

test('Lease watches that time out, are reset or stall on a full buffer while events stream end cleanly', async (t) => {
  // A write after end() would be an 'error' on the response and, unhandled, kill the server.
  const errors: unknown[] = [];
  const onError = (e: unknown) => errors.push(e);
  process.on('uncaughtException', onError);
  t.after(() => process.off('uncaughtException', onError));
  const api = await TestApiServer.start({ bookmarkIntervalMs: 5 });
  t.after(() => api.close());
  const client = kubeConfigFor(api).makeApiClient(CoordinationV1Api);
  const namespace = 'kube-system';
  let current = await client.createNamespacedLease({ namespace, body: lease('kilo-leader-a', 'n1') });
  const url = new URL(api.url);
  const ended: Promise<'end' | 'reset'>[] = [];
  for (let i = 0; i < 30; i++)
    ended.push(
      new Promise((resolve) => {
        const req = request(
          {
            host: url.hostname,
            port: url.port,
            path: `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases?watch=true&allowWatchBookmarks=true&timeoutSeconds=1`,
          },
          (res) => {
            // A third never read (the server's writes back up), a third reset by the client.
            res.on('data', () => i % 3 === 0 && res.pause());
            res.on('end', () => resolve('end'));
            if (i % 3 === 1) setTimeout(() => req.destroy(), 950 + i);
          },
        );
        req.on('error', () => resolve('reset'));
        req.on('close', () => resolve('reset'));
        req.end();
      }),
    );
  // Big events, back to back, across the moment the watches time out.
  const big = 'x'.repeat(50_000);
  const until = Date.now() + 1_500;
  while (Date.now() < until)
    current = await client.replaceNamespacedLease({
      name: 'kilo-leader-a',
      namespace,
      body: {
        ...current,
        metadata: { ...current.metadata, annotations: { big } },
        spec: { ...current.spec, renewTime: new V1MicroTime(Date.now()) },
      },
    });
  const read = await Promise.all(ended.filter((_, i) => i % 3 === 2));
  assert.ok(
    read.every((o) => o === 'end'),
    `a watch that is read ends by its timeout: ${read.join(' ')}`,
  );
  await waitUntil('every watch is gone', () => api.openWatches('leases') === 0);
  assert.equal((await client.readNamespacedLease({ name: 'kilo-leader-a', namespace })).spec?.holderIdentity, 'n1');
  assert.deepEqual(errors, []);
});
