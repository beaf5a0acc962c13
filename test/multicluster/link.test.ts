/**
 * `kg multicluster`'s loop (src/multicluster/link.ts) against two of the lab's API servers,
 * through the real Kubernetes client: each cluster's nodes become the other's Peers and follow
 * them (a node joins, changes key or endpoint, leaves), an exported Service is mirrored as a
 * selector-less Service with an EndpointSlice, what others made is left alone, overlapping ranges
 * are refused before anything is written, and unlinking removes exactly what the link made.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TestApiServer, waitUntil } from '../../packages/lab/src/apiserver.js';
import { kubeConfigFor } from '../../packages/lab/src/apiserver-kubeconfig.js';
import { KubernetesSource } from '../../src/backend/kubernetes/index.js';
import type { Logger } from '../../src/backend/source.js';
import { Cidr } from '../../src/net/cidr.js';
import type { KubeObject } from '../../src/model/parse.js';
import { clusterView } from '../../src/cli/multicluster-view.js';
import { ClusterApi } from '../../src/multicluster/api.js';
import { Link, unlink, type Side } from '../../src/multicluster/link.js';
import { exportLabel, sourceLabel } from '../../src/multicluster/view.js';
import { node, peer, wgKey, type NodeSpec } from '../helpers/cluster.js';

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** A node of the cluster whose pods are 10.`pods`.0.0/16 and WireGuard subnet 10.`pods - 28`.0.0/16, as its agent announces. */
const nodeOf = (name: string, i: number, pods: number, granularity: string, extra: NodeSpec = {}) =>
  node(name, {
    endpoint: `203.0.113.${pods + i}:51820`,
    podCIDR: `10.${pods}.${i}.0/24`,
    internalIP: `192.168.${pods}.${i}/24`,
    granularity,
    lastSeen: nowSeconds(),
    annotations: { 'kilo.squat.ai/mesh-flags': JSON.stringify({ subnet: `10.${pods - 28}.0.0/16` }) },
    ...extra,
  });

function recordingLogger(lines: string[]): Logger {
  const log = (_o: object, msg: string) => void lines.push(msg);
  return { debug: log, info: log, warn: log, error: log };
}

function side(api: TestApiServer, name: string, serviceCidr: string): Side {
  const kubeConfig = kubeConfigFor(api);
  return {
    api: new ClusterApi(kubeConfig, name),
    source: new KubernetesSource({ kubeConfig }),
    view: (objects, now) => clusterView(name, objects, now, [Cidr.parse(serviceCidr)], () => {}),
  };
}

const peerSpec = (api: TestApiServer, name: string) =>
  api.peer(name)?.spec as
    { publicKey: string; allowedIPs: string[]; endpoint: { dnsOrIP: { ip: string } } } | undefined;

test('kg multicluster keeps two clusters linked', { timeout: 120_000 }, async (t) => {
  const a = await TestApiServer.start({ serviceCidr: '10.43.0.0/16' });
  const b = await TestApiServer.start({ serviceCidr: '10.53.0.0/16' });
  const lines: string[] = [];
  let link: Link | undefined;
  t.after(async () => {
    await link?.stop();
    await Promise.all([a.close(), b.close()]);
  });
  for (const i of [1, 2]) a.addNode(nodeOf(`a${i}`, i, 42, 'location'));
  for (const i of [1, 2]) b.addNode(nodeOf(`b${i}`, i, 52, 'cross'));
  a.addPeer(peer('laptop', { allowedIPs: ['10.5.0.1/32'] }));
  const one = side(a, 'one', '10.43.0.0/16');
  const two = side(b, 'two', '10.53.0.0/16');

  await t.test('overlapping ranges: refused before anything is written', async () => {
    const c = await TestApiServer.start();
    t.after(() => c.close());
    c.addNode(nodeOf('c1', 1, 62, 'cross', { podCIDR: '10.42.2.0/25' }));
    const bad = new Link(side(a, 'one', '10.43.0.0/16'), side(c, 'three', '10.63.0.0/16'), {
      resyncMs: 60_000,
      debounceMs: 10,
      logger: recordingLogger([]),
    });
    await assert.rejects(
      bad.start(),
      /the clusters' ranges overlap: cluster "one"'s pod CIDR 10\.42\.2\.0\/24 \(node "a2"\) holds cluster "three"'s pod CIDR 10\.42\.2\.0\/25 \(node "c1"\)/,
    );
    await bad.stop();
    assert.deepEqual(a.peerNames(), ['laptop']);
    assert.deepEqual(c.peerNames(), []);
  });

  link = new Link(one, two, { resyncMs: 500, debounceMs: 10, logger: recordingLogger(lines) });
  await link.start();

  await t.test('each cluster’s segments are Peers of the other, labelled with their source', () => {
    assert.deepEqual(a.peerNames(), ['b1', 'b2', 'laptop']);
    assert.deepEqual(b.peerNames(), ['a1'], 'location granularity: one Peer for the location, its leader’s name');
    assert.equal(a.peer('b1')?.metadata?.labels?.[sourceLabel], 'two');
    assert.equal(b.peer('a1')?.metadata?.labels?.[sourceLabel], 'one');
    assert.deepEqual(peerSpec(b, 'a1')?.allowedIPs, [
      '10.42.1.0/24',
      '192.168.42.1/32',
      '10.42.2.0/24',
      '192.168.42.2/32',
      '10.14.0.1/32',
      '10.43.0.0/16',
    ]);
    assert.deepEqual(peerSpec(a, 'b1')?.allowedIPs, [
      '10.52.1.0/24',
      '192.168.52.1/32',
      '10.24.0.1/32',
      '10.53.0.0/16',
    ]);
    assert.deepEqual(
      peerSpec(a, 'b2')?.allowedIPs,
      ['10.52.2.0/24', '192.168.52.2/32', '10.24.0.2/32'],
      'the service range on one Peer',
    );
    assert.equal(a.peer('laptop')?.metadata?.labels?.[sourceLabel], undefined, 'someone else’s Peer untouched');
  });

  await t.test('a node joins, changes key and endpoint, leaves: the other cluster follows', async () => {
    b.addNode(nodeOf('b3', 3, 52, 'cross'));
    await waitUntil('Peer b3 in cluster one', () => a.peer('b3') !== undefined);
    assert.equal(peerSpec(a, 'b3')?.publicKey, wgKey('b3'));
    b.patchNode('b1', { metadata: { annotations: { 'kilo.squat.ai/key': wgKey('b1 again') } } });
    await waitUntil('Peer b1 has the new key', () => peerSpec(a, 'b1')?.publicKey === wgKey('b1 again'));
    b.patchNode('b2', { metadata: { annotations: { 'kilo.squat.ai/endpoint': '198.51.100.9:51820' } } });
    await waitUntil('Peer b2 has the new endpoint', () => peerSpec(a, 'b2')?.endpoint.dnsOrIP.ip === '198.51.100.9');
    b.deleteNode('b3');
    await waitUntil('Peer b3 gone from cluster one', () => a.peer('b3') === undefined);
    // A node changing location (location granularity): the Peer follows the new segments.
    a.patchNode('a2', { metadata: { annotations: { 'kilo.squat.ai/location': 'elsewhere' } } });
    await waitUntil('a location of its own, a Peer of its own', () => b.peerNames().join() === 'a1,a2');
  });

  await t.test('a Peer deleted or edited by hand is put back at the next resync', async () => {
    b.deletePeer('a1');
    await waitUntil('Peer a1 back', () => b.peer('a1') !== undefined, 10_000);
    b.patchPeer('a2', { spec: { allowedIPs: ['10.99.0.0/16'] } });
    await waitUntil('Peer a2 repaired', () => peerSpec(b, 'a2')?.allowedIPs[0] === '10.42.2.0/24', 10_000);
  });

  await t.test('a Peer of that name made by someone else: left alone, said once, taken over once gone', async () => {
    a.addPeer(peer('b4', { allowedIPs: ['10.5.0.4/32'] }));
    b.addNode(nodeOf('b4', 4, 52, 'cross'));
    const said = () =>
      lines.filter((l) => l.startsWith('Peer b4 exists and is not mirrored from cluster "two"')).length;
    await waitUntil('the conflict reported', () => said() === 1, 10_000);
    await new Promise((r) => setTimeout(r, 1500)); // three resyncs
    assert.equal(said(), 1, 'reported once while it lasts');
    assert.deepEqual(peerSpec(a, 'b4')?.allowedIPs, ['10.5.0.4/32'], 'untouched');
    a.deletePeer('b4');
    await waitUntil('the controller’s own b4', () => a.peer('b4')?.metadata?.labels?.[sourceLabel] === 'two', 10_000);
    b.deleteNode('b4');
    await waitUntil('b4 gone', () => a.peer('b4') === undefined, 10_000);
  });

  await t.test('an exported Service becomes a selector-less Service and an EndpointSlice', async () => {
    const services = a.types.find((x) => x.name === 'services')!;
    const slices = b.types.find((x) => x.name === 'endpointslices')!;
    const bServices = b.types.find((x) => x.name === 'services')!;
    a.createObject(services, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'gpu', namespace: 'default', labels: { [exportLabel]: 'true' } },
      spec: { clusterIP: '10.43.0.7', selector: { app: 'gpu' }, ports: [{ name: 'http', port: 80, protocol: 'TCP' }] },
    } as KubeObject);
    await waitUntil('slice in cluster two', () => b.get(slices, 'default', 'gpu-one') !== undefined, 10_000);
    const svc = b.get(bServices, 'default', 'gpu') as KubeObject & { spec: Record<string, unknown> };
    assert.equal(svc.spec['selector'], undefined);
    assert.match(String(svc.spec['clusterIP']), /^10\.53\./, "a clusterIP of cluster two's own range");
    const slice = b.get(slices, 'default', 'gpu-one') as KubeObject & { endpoints: unknown };
    assert.deepEqual(slice.endpoints, [{ addresses: ['10.43.0.7'], conditions: { ready: true } }]);
    // A Service of that name in cluster two that is not the link's: left alone, no slice, said once.
    b.createObject(bServices, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'db', namespace: 'default' },
      spec: { clusterIP: '10.53.0.99', ports: [{ port: 5432, protocol: 'TCP' }] },
    } as KubeObject);
    a.createObject(services, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'db', namespace: 'default', labels: { [exportLabel]: 'true' } },
      spec: { clusterIP: '10.43.0.8', ports: [{ port: 5432, protocol: 'TCP' }] },
    } as KubeObject);
    const said = () => lines.filter((l) => l.startsWith('Service default/db exists and is not mirrored')).length;
    await waitUntil('the conflict reported', () => said() === 1, 10_000);
    // Three resyncs, with passes of the Peers alone between them (an endpoint changing).
    for (const ip of ['198.51.100.10', '198.51.100.11', '198.51.100.12']) {
      b.patchNode('b2', { metadata: { annotations: { 'kilo.squat.ai/endpoint': `${ip}:51820` } } });
      await waitUntil(`Peer b2 at ${ip}`, () => peerSpec(a, 'b2')?.endpoint.dnsOrIP.ip === ip);
      await new Promise((r) => setTimeout(r, 600));
    }
    assert.equal(said(), 1, 'reported once while it lasts');
    assert.equal(b.get(slices, 'default', 'db-one'), undefined, 'no endpoints added to their Service');
    assert.equal(b.get(bServices, 'default', 'db')?.metadata?.labels?.[sourceLabel], undefined);
    a.deleteObject(services, 'default', 'db');

    // Not exported any more: both go.
    a.replaceObject(services, {
      ...a.get(services, 'default', 'gpu')!,
      metadata: { ...a.get(services, 'default', 'gpu')!.metadata, labels: {} },
    });
    await waitUntil(
      'mirror gone',
      () => b.get(bServices, 'default', 'gpu') === undefined && b.get(slices, 'default', 'gpu-one') === undefined,
      10_000,
    );
  });

  await t.test('unlinking removes what the link made, and only that', async () => {
    await link!.stop();
    link = undefined;
    const n = await unlink(one.api, two.api);
    assert.equal(n, 4);
    assert.deepEqual(a.peerNames(), ['laptop']);
    assert.deepEqual(b.peerNames(), []);
  });
  assert.ok(lines.some((l) => l === 'created Peer'));
});
