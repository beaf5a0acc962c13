/**
 * The lab's API server answers as kube-apiserver does, driven by the real client library:
 * strategic merge and JSON patches (and their refusals), the CRDs of manifests/, paging,
 * resourceVersion=0 lists, optimistic concurrency, validation, selectors.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import {
  ApiException,
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { parse } from 'yaml';
import { TestApiServer, crdsType } from '../../packages/lab/src/apiserver.js';
import { node, peer } from '../helpers/cluster.js';
import { kubeConfigFor } from '../../packages/lab/src/apiserver-kubeconfig.js';

async function setup(t: { after: (f: () => Promise<void>) => void }) {
  const api = await TestApiServer.start();
  t.after(() => api.close());
  for (const [name, region, podCIDR] of [
    ['a', 'eu', '10.42.1.0/24'],
    ['b', 'us', '10.42.2.0/24'],
  ] as const) {
    const n = node(name, { podCIDR });
    api.addNode({ ...n, metadata: { ...n.metadata, labels: { 'topology.kubernetes.io/region': region } } });
  }
  api.addPeer(peer('laptop', { allowedIPs: ['10.5.0.1/32'] }));
  const kc = kubeConfigFor(api);
  return {
    api,
    core: kc.makeApiClient(CoreV1Api),
    custom: kc.makeApiClient(CustomObjectsApi),
    ext: kc.makeApiClient(ApiextensionsV1Api),
  };
}

const as = (strategy: string) => setHeaderOptions('Content-Type', strategy);

/** The HTTP code and message of a refused request. */
async function refused(p: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof ApiException, `not an ApiException: ${String(e)}`);
    const body = (typeof e.body === 'string' ? JSON.parse(e.body) : e.body) as { message?: string; code?: number };
    assert.equal(body.code, e.code, 'the Status carries the HTTP code');
    return { code: e.code, message: body.message ?? '' };
  }
  assert.fail('the request succeeded');
}

describe('the lab API server is as strict as kube-apiserver', () => {
  test('strategic merge patch of a Node (how client-go writes Kilo annotations): maps merge, null deletes, directives refused', async (t) => {
    const { api, core } = await setup(t);
    await core.patchNode(
      { name: 'a', body: { metadata: { annotations: { 'kilo.squat.ai/endpoint': '198.18.1.1:51820', x: 'y' } } } },
      as(PatchStrategy.StrategicMergePatch),
    );
    await core.patchNode(
      { name: 'a', body: { metadata: { annotations: { x: null }, labels: { extra: 'yes' } } } },
      as(PatchStrategy.StrategicMergePatch),
    );
    const a = api.node('a')!;
    assert.deepEqual(a.metadata?.annotations?.['kilo.squat.ai/endpoint'], '198.18.1.1:51820');
    assert.equal(a.metadata?.annotations?.x, undefined);
    assert.equal(a.metadata?.labels?.extra, 'yes');
    assert.equal(a.metadata?.labels?.['topology.kubernetes.io/region'], 'eu', 'a label the patch does not name stays');
    // Lists with a merge key merge by it; others are replaced whole.
    await core.patchNode(
      { name: 'a', body: { status: { addresses: [{ type: 'InternalIP', address: '192.168.1.11' }] } } },
      as(PatchStrategy.StrategicMergePatch),
    );
    await core.patchNode(
      { name: 'a', body: { status: { addresses: [{ type: 'Hostname', address: 'a' }] } } },
      as(PatchStrategy.StrategicMergePatch),
    );
    assert.deepEqual((api.node('a') as { status?: { addresses?: unknown[] } }).status?.addresses, [
      { type: 'InternalIP', address: '192.168.1.11' },
      { type: 'Hostname', address: 'a' },
    ]);
    const directive = await refused(
      core.patchNode({ name: 'a', body: { metadata: { $patch: 'replace' } } }, as(PatchStrategy.StrategicMergePatch)),
    );
    assert.equal(directive.code, 400);
    assert.match(directive.message, /\$patch/);
  });

  test('a strategic merge patch of a custom resource is 415, as for every CRD; an unknown patch type too', async (t) => {
    const { core, custom } = await setup(t);
    const r = await refused(
      custom.patchClusterCustomObject(
        { group: 'kilo.squat.ai', version: 'v1alpha1', plural: 'peers', name: 'laptop', body: { spec: {} } },
        as(PatchStrategy.StrategicMergePatch),
      ),
    );
    assert.equal(r.code, 415);
    assert.match(r.message, /application\/merge-patch\+json/);
    assert.equal((await refused(core.patchNode({ name: 'a', body: {} }, as('text/plain')))).code, 415);
  });

  test('JSON patch (RFC 6902): test guards the change, a failed test or a missing path is 422, a malformed body 400', async (t) => {
    const { api, core } = await setup(t);
    await core.patchNode(
      {
        name: 'a',
        body: [
          { op: 'test', path: '/metadata/labels/topology.kubernetes.io~1region', value: 'eu' },
          { op: 'add', path: '/metadata/annotations/kilo.squat.ai~1leader', value: 'true' },
        ],
      },
      as(PatchStrategy.JsonPatch),
    );
    assert.equal(api.node('a')?.metadata?.annotations?.['kilo.squat.ai/leader'], 'true');
    const failedTest = await refused(
      core.patchNode(
        {
          name: 'a',
          body: [
            { op: 'test', path: '/metadata/labels/topology.kubernetes.io~1region', value: 'us' },
            { op: 'remove', path: '/metadata/annotations/kilo.squat.ai~1leader' },
          ],
        },
        as(PatchStrategy.JsonPatch),
      ),
    );
    assert.equal(failedTest.code, 422);
    assert.equal(
      api.node('a')?.metadata?.annotations?.['kilo.squat.ai/leader'],
      'true',
      'nothing of the patch applied',
    );
    const missing = await refused(
      core.patchNode(
        { name: 'a', body: [{ op: 'remove', path: '/metadata/annotations/nope' }] },
        as(PatchStrategy.JsonPatch),
      ),
    );
    assert.equal(missing.code, 422);
    assert.equal(
      (await refused(core.patchNode({ name: 'a', body: { op: 'add' } }, as(PatchStrategy.JsonPatch)))).code,
      400,
    );
    // Kilo removes its annotations on SIGTERM this way.
    await core.patchNode(
      { name: 'a', body: [{ op: 'remove', path: '/metadata/annotations/kilo.squat.ai~1leader' }] },
      as(PatchStrategy.JsonPatch),
    );
    assert.equal(api.node('a')?.metadata?.annotations?.['kilo.squat.ai/leader'], undefined);
  });

  test("the CRDs of manifests/ are served under apiextensions.k8s.io/v1 (Kilo's agent exits without the Peer's)", async (t) => {
    const { api, ext } = await setup(t);
    const crd = await ext.readCustomResourceDefinition({ name: 'peers.kilo.squat.ai' });
    assert.equal(crd.spec.names.kind, 'Peer');
    const manifest = parse(readFileSync(join(import.meta.dirname, '../../manifests/crds.yaml'), 'utf8')) as {
      spec: unknown;
    };
    assert.deepEqual(api.get(crdsType, undefined, 'peers.kilo.squat.ai')?.spec, manifest.spec);
    const list = await ext.listCustomResourceDefinition();
    assert.deepEqual(
      list.items.map((c) => c.metadata?.name),
      ['peers.kilo.squat.ai'],
    );
    assert.equal((await refused(ext.readCustomResourceDefinition({ name: 'nope.example.com' }))).code, 404);
  });

  test('limit/continue pages a list at the first page’s version; resourceVersion=0 is served whole; a compacted continue is 410', async (t) => {
    const { api, core } = await setup(t);
    api.addNode(node('c', { location: 'us' }));
    const first = await core.listNode({ limit: 2 });
    assert.deepEqual(
      first.items.map((n) => n.metadata?.name),
      ['a', 'b'],
    );
    assert.equal(first.metadata?.remainingItemCount, 1);
    assert.ok(first.metadata?._continue);
    api.addNode(node('d', { location: 'us' }));
    api.deleteNode('c');
    const second = await core.listNode({ limit: 2, _continue: first.metadata._continue });
    assert.deepEqual(
      second.items.map((n) => n.metadata?.name),
      ['c'],
      'the later page shows the list as it was: c still there, d not yet',
    );
    assert.equal(second.metadata?._continue, undefined);
    assert.equal(second.metadata?.resourceVersion, first.metadata.resourceVersion);
    const whole = await core.listNode({ limit: 1, resourceVersion: '0' });
    assert.deepEqual(
      whole.items.map((n) => n.metadata?.name),
      ['a', 'b', 'd'],
    );
    const again = await core.listNode({ limit: 1 });
    api.addNode(node('e', {}));
    api.compact();
    assert.equal((await refused(core.listNode({ limit: 1, _continue: again.metadata?._continue }))).code, 410);
    assert.equal((await refused(core.listNode({ _continue: 'garbage' }))).code, 400);
  });

  test('a replace with a stale resourceVersion is 409; invalid labels and a changed podCIDR are 422; selectors filter', async (t) => {
    const { core } = await setup(t);
    const a = await core.readNode({ name: 'a' });
    await core.replaceNode({ name: 'a', body: { ...a, metadata: { ...a.metadata, labels: { k: 'v1' } } } });
    const stale = await refused(
      core.replaceNode({ name: 'a', body: { ...a, metadata: { ...a.metadata, labels: { k: 'v2' } } } }),
    );
    assert.equal(stale.code, 409);
    const badLabel = await refused(
      core.patchNode({ name: 'a', body: { metadata: { labels: { k: 'not valid!' } } } }, as(PatchStrategy.MergePatch)),
    );
    assert.equal(badLabel.code, 422);
    assert.match(badLabel.message, /metadata\.labels: Invalid value: "not valid!"/);
    const podCIDR = await refused(
      core.patchNode({ name: 'a', body: { spec: { podCIDR: '10.42.9.0/24' } } }, as(PatchStrategy.MergePatch)),
    );
    assert.equal(podCIDR.code, 422);
    assert.equal((await refused(core.createNode({ body: { metadata: { name: 'Bad_Name' } } }))).code, 422);
    assert.equal((await refused(core.createNode({ body: { metadata: { name: 'a' } } }))).code, 409);
    const us = await core.listNode({ labelSelector: 'topology.kubernetes.io/region in (us,asia)' });
    assert.deepEqual(
      us.items.map((n) => n.metadata?.name),
      ['b'],
    );
    const k = await core.listNode({ labelSelector: 'k=v1,!topology.kubernetes.io/region' });
    assert.deepEqual(
      k.items.map((n) => n.metadata?.name),
      ['a'],
    );
    const byName = await core.listNode({ fieldSelector: 'metadata.name=b' });
    assert.deepEqual(
      byName.items.map((n) => n.metadata?.name),
      ['b'],
    );
    assert.equal((await refused(core.listNode({ fieldSelector: 'spec.podCIDR=x' }))).code, 400);
  });
});
