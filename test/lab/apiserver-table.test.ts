/**
 * Server-side printing: the lab's API server answers `Accept: application/json;as=Table;…` with
 * a meta.k8s.io Table whose columns are kube-apiserver's (Nodes' printer, a CRD's printer
 * columns, the generic Name/Created At), negotiates the Accept header as kube-apiserver does and
 * carries each row's object as `includeObject` asks. kubectl's view of it: kubectl.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TestApiServer, crdsType } from '../../packages/lab/src/apiserver.js';
import { humanDuration } from '../../packages/lab/src/apiserver-table.js';
import { peer } from '../helpers/cluster.js';

const tableV1 = 'application/json;as=Table;v=v1;g=meta.k8s.io';
const kubectlAccept = `${tableV1},application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json`;

interface Table {
  kind: string;
  apiVersion: string;
  metadata: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  columnDefinitions: { name: string; type: string; priority: number }[];
  rows: { cells: unknown[]; object: { kind?: string; apiVersion?: string; metadata?: { name?: string } } | null }[];
}

async function setup(t: { after: (f: () => Promise<void>) => void }) {
  const api = await TestApiServer.start();
  t.after(() => api.close());
  const get = async (path: string, accept?: string) => {
    const res = await fetch(`${api.url}${path}`, { headers: accept ? { Accept: accept } : {} });
    return { code: res.status, body: (await res.json()) as Table & { items?: unknown[] } };
  };
  return { api, get };
}

const hoursAgo = (h: number) => new Date(Date.now() - h * 3600_000).toISOString().replace(/\.\d+Z$/, 'Z');

test('Nodes print as kube-apiserver prints them: STATUS, ROLES, AGE, VERSION, and the wide columns', async (t) => {
  const { api, get } = await setup(t);
  api.addNode({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: 'a',
      creationTimestamp: hoursAgo(3),
      labels: { 'node-role.kubernetes.io/worker': '', 'node-role.kubernetes.io/control-plane': '', x: 'y' },
    },
    spec: { unschedulable: true },
    status: {
      conditions: [{ type: 'Ready', status: 'True' }],
      nodeInfo: { kubeletVersion: 'v1.31.2', osImage: 'Debian GNU/Linux 12 (bookworm)' },
      addresses: [
        { type: 'Hostname', address: 'a' },
        { type: 'InternalIP', address: '192.168.1.10' },
      ],
    },
  } as never);
  api.addNode({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: 'b', labels: { 'kubernetes.io/role': 'edge' } },
    status: { conditions: [{ type: 'Ready', status: 'False' }] },
  } as never);
  api.addNode({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'c' } });

  const { code, body } = await get('/api/v1/nodes', kubectlAccept);
  assert.equal(code, 200);
  assert.equal(body.kind, 'Table');
  assert.equal(body.apiVersion, 'meta.k8s.io/v1');
  assert.equal(body.metadata.resourceVersion, api.resourceVersion);
  assert.deepEqual(
    body.columnDefinitions.map((c) => [c.name, c.priority]),
    [
      ['Name', 0],
      ['Status', 0],
      ['Roles', 0],
      ['Age', 0],
      ['Version', 0],
      ['Internal-IP', 1],
      ['External-IP', 1],
      ['OS-Image', 1],
      ['Kernel-Version', 1],
      ['Container-Runtime', 1],
    ],
  );
  assert.deepEqual(body.rows[0]!.cells, [
    'a',
    'Ready,SchedulingDisabled',
    'control-plane,worker',
    '3h',
    'v1.31.2',
    '192.168.1.10',
    '<none>',
    'Debian GNU/Linux 12 (bookworm)',
    '<unknown>',
    '<unknown>',
  ]);
  assert.deepEqual(body.rows[1]!.cells.slice(0, 3), ['b', 'NotReady', 'edge']);
  assert.deepEqual(body.rows[2]!.cells.slice(0, 3), ['c', 'Unknown', '<none>']);
  assert.equal(body.rows[2]!.cells[4], '');
  // The default includeObject is Metadata: a PartialObjectMetadata in the Table's group version.
  assert.deepEqual(
    [body.rows[0]!.object?.kind, body.rows[0]!.object?.apiVersion, body.rows[0]!.object?.metadata?.name],
    ['PartialObjectMetadata', 'meta.k8s.io/v1', 'a'],
  );

  const one = await get('/api/v1/nodes/b', kubectlAccept);
  assert.equal(one.body.kind, 'Table');
  assert.deepEqual(
    one.body.rows.map((r) => r.cells[0]),
    ['b'],
  );
  assert.equal(one.body.metadata.resourceVersion, api.node('b')?.metadata?.resourceVersion);
});

test('a custom resource prints its CRD printer columns; without them Age alone', async (t) => {
  const { api, get } = await setup(t);
  api.addPeer(peer('laptop', { allowedIPs: ['10.5.0.1/32', '10.5.0.2/32'], keepalive: 25 }));
  api.addPeer(peer('phone', { allowedIPs: ['10.5.0.3/32'] }));
  const { body } = await get('/apis/kilo.squat.ai/v1alpha1/peers', kubectlAccept);
  assert.deepEqual(
    body.columnDefinitions.map((c) => [c.name, c.type]),
    [
      ['Name', 'string'],
      ['Allowed IPs', 'string'],
      ['Keepalive', 'integer'],
    ],
  );
  assert.deepEqual(
    body.rows.map((r) => r.cells),
    [
      ['laptop', '["10.5.0.1/32","10.5.0.2/32"]', 25],
      ['phone', '["10.5.0.3/32"]', null],
    ],
  );

  // The CRD is read at each request: without printer columns, Name and Age.
  const crd = api.get(crdsType, undefined, 'peers.kilo.squat.ai')!;
  const spec = crd.spec as { versions: Record<string, unknown>[] };
  delete spec.versions[0]!['additionalPrinterColumns'];
  api.replaceObject(crdsType, crd);
  const bare = await get('/apis/kilo.squat.ai/v1alpha1/peers/laptop', tableV1);
  assert.deepEqual(
    bare.body.columnDefinitions.map((c) => [c.name, c.type]),
    [
      ['Name', 'string'],
      ['Age', 'date'],
    ],
  );
  assert.match(String(bare.body.rows[0]!.cells[1]), /^\d+s$/);
});

test('other types print the generic Name and Created At', async (t) => {
  const { get } = await setup(t);
  const { body } = await get('/apis/apiextensions.k8s.io/v1/customresourcedefinitions', kubectlAccept);
  assert.deepEqual(
    body.columnDefinitions.map((c) => c.name),
    ['Name', 'Created At'],
  );
  assert.equal(body.rows[0]!.cells[0], 'peers.kilo.squat.ai');
  assert.match(String(body.rows[0]!.cells[1]), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
});

test('the Accept header is negotiated; includeObject picks what each row carries', async (t) => {
  const { api, get } = await setup(t);
  api.addPeer(peer('laptop', { allowedIPs: ['10.5.0.1/32'] }));
  const path = '/apis/kilo.squat.ai/v1alpha1/peers';
  // No Accept, plain JSON, a Table of an unknown version before plain JSON: the list itself.
  for (const accept of [undefined, 'application/json', 'application/json;as=Table;v=v2;g=meta.k8s.io,application/json'])
    assert.equal((await get(path, accept)).body.kind, 'PeerList', String(accept));
  // v1beta1 alone, or preferred by q.
  assert.equal(
    (await get(path, 'application/json;as=Table;v=v1beta1;g=meta.k8s.io')).body.apiVersion,
    'meta.k8s.io/v1beta1',
  );
  assert.equal(
    (await get(path, `application/json;q=0.5,application/json;as=Table;v=v1beta1;g=meta.k8s.io`)).body.kind,
    'Table',
  );
  // Only Tables it cannot serve: 406.
  assert.equal((await get(path, 'application/json;as=Table;v=v2;g=meta.k8s.io')).code, 406);

  const object = (await get(`${path}?includeObject=Object`, kubectlAccept)).body.rows[0]!.object;
  assert.equal(object?.kind, 'Peer');
  assert.equal(object?.apiVersion, 'kilo.squat.ai/v1alpha1');
  assert.ok((object as { spec?: unknown }).spec);
  const nodeObject = api.addNode({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'n' } });
  const core = (await get('/api/v1/nodes?includeObject=Object', kubectlAccept)).body.rows[0]!.object;
  assert.deepEqual([core?.kind, core?.apiVersion, core?.metadata?.name], ['Node', 'v1', nodeObject.metadata?.name]);
  assert.equal((await get(`${path}?includeObject=None`, kubectlAccept)).body.rows[0]!.object, null);
  assert.equal((await get(`${path}?includeObject=Everything`, kubectlAccept)).code, 400);
});

test('a paged list keeps its continue token and remaining count in the Table', async (t) => {
  const { api, get } = await setup(t);
  for (const n of ['a', 'b', 'c']) api.addNode({ apiVersion: 'v1', kind: 'Node', metadata: { name: n } });
  const { body } = await get('/api/v1/nodes?limit=2', kubectlAccept);
  assert.equal(body.rows.length, 2);
  assert.equal(body.metadata.remainingItemCount, 1);
  const next = await get(
    `/api/v1/nodes?limit=2&continue=${encodeURIComponent(body.metadata.continue!)}`,
    kubectlAccept,
  );
  assert.deepEqual(
    next.body.rows.map((r) => r.cells[0]),
    ['c'],
  );
});

test('AGE is Go duration.HumanDuration', () => {
  const s = 1000;
  const cases: [number, string][] = [
    [-5 * s, '<invalid>'],
    [-1 * s, '0s'],
    [0, '0s'],
    [119 * s, '119s'],
    [120 * s, '2m'],
    [150 * s, '2m30s'],
    [10 * 60 * s, '10m'],
    [179 * 60 * s, '179m'],
    [3 * 3600 * s, '3h'],
    [(3 * 3600 + 20 * 60) * s, '3h20m'],
    [8 * 3600 * s, '8h'],
    [47 * 3600 * s, '47h'],
    [48 * 3600 * s, '2d'],
    [(2 * 24 + 5) * 3600 * s, '2d5h'],
    [8 * 24 * 3600 * s, '8d'],
    [800 * 24 * 3600 * s, '2y70d'],
    [9 * 365 * 24 * 3600 * s, '9y'],
  ];
  for (const [ms, want] of cases) assert.equal(humanDuration(ms), want, `${ms} ms`);
});
