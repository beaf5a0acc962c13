/**
 * The multi-cluster controller's pure part: the Peers a cluster's nodes make in the other (as
 * `kgctl showconf node N --as-peer --allowed-ips SERVICECIDR` for each leader, the service range
 * on one of them), the overlap refusal, the exported Services, and the plan of writes.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Cidr } from '../../src/net/cidr.js';
import type { KubeObject } from '../../src/model/parse.js';
import { planChanges } from '../../src/multicluster/diff.js';
import { mirroredPeers } from '../../src/multicluster/peers.js';
import { overlapError } from '../../src/multicluster/ranges.js';
import { mirroredServices } from '../../src/multicluster/services.js';
import { exportLabel, sourceLabel, type ClusterView } from '../../src/multicluster/view.js';
import type { Granularity } from '../../src/model/types.js';
import { meshOptions, node, NOW, parsed, wgKey } from '../helpers/cluster.js';

/** Cluster two: two locations of two nodes, pods 10.52.N.0/24, WireGuard 10.14.0.0/16. */
function two(granularity: Granularity, extra: KubeObject[] = []): ClusterView {
  const nodes = [1, 2, 3, 4].map((i) =>
    node(`b${i}`, {
      location: i <= 2 ? 'east' : 'west',
      endpoint: `203.0.113.${i}:51820`,
      internalIP: `192.168.10${i}.1/24`,
      podCIDR: `10.52.${i}.0/24`,
    }),
  );
  return {
    name: 'two',
    cluster: parsed([...nodes, ...extra]),
    options: meshOptions({ granularity, subnet: Cidr.parse('10.14.0.0/16') }),
    now: NOW,
    serviceCidrs: [Cidr.parse('10.53.0.0/16')],
  };
}

const one = (podCIDR = '10.42.1.0/24', subnet = '10.4.0.0/16', service = '10.43.0.0/16'): ClusterView => ({
  name: 'one',
  cluster: parsed([node('a1', { endpoint: '198.51.100.1:51820', podCIDR })]),
  options: meshOptions({ subnet: Cidr.parse(subnet) }),
  now: NOW,
  serviceCidrs: [Cidr.parse(service)],
});

const specOf = (o: KubeObject) => o.spec as { allowedIPs: string[]; publicKey: string; endpoint: unknown };

describe('mirroredPeers', () => {
  test('location: one Peer per location, named after its leader, the service range on the first only', () => {
    const peers = mirroredPeers(two('location'));
    assert.deepEqual(
      peers.map((p) => p.metadata?.name),
      ['b1', 'b3'],
    );
    assert.deepEqual(peers[0]!.metadata?.labels, { [sourceLabel]: 'two' });
    assert.deepEqual(specOf(peers[0]!), {
      allowedIPs: [
        '10.52.1.0/24',
        '192.168.101.1/32',
        '10.52.2.0/24',
        '192.168.102.1/32',
        '10.14.0.1/32',
        '10.53.0.0/16',
      ],
      endpoint: { dnsOrIP: { ip: '203.0.113.1' }, port: 51820 },
      publicKey: wgKey('b1'),
    });
    assert.ok(!specOf(peers[1]!).allowedIPs.includes('10.53.0.0/16'), 'one claim of the service range');
  });

  test('cross: one Peer per node; a node not ready (stale last-seen) makes none', () => {
    const stale = node('b5', {
      location: 'west',
      endpoint: '203.0.113.5:51820',
      podCIDR: '10.52.5.0/24',
      lastSeen: NOW - 3600,
    });
    const peers = mirroredPeers(two('cross', [stale]));
    assert.deepEqual(
      peers.map((p) => p.metadata?.name),
      ['b1', 'b2', 'b3', 'b4'],
    );
    assert.deepEqual(
      peers.map((p) => specOf(p).allowedIPs.filter((c) => c === '10.53.0.0/16').length),
      [1, 0, 0, 0],
    );
  });

  test('no ready node: no Peer', () => {
    const v = two('cross');
    assert.deepEqual(mirroredPeers({ ...v, now: NOW + 3600 }), []);
  });
});

describe('overlapError', () => {
  test('disjoint ranges link', () => assert.equal(overlapError(one(), two('location')), null));
  test('a pod CIDR inside the other cluster’s pod CIDR is named, with its node', () =>
    assert.match(
      overlapError(one('10.52.3.0/25'), two('location')) ?? '',
      /cluster "two"'s pod CIDR 10\.52\.3\.0\/24 \(node "b3"\) holds cluster "one"'s pod CIDR 10\.52\.3\.0\/25 \(node "a1"\)/,
    ));
  test('one WireGuard subnet for both', () =>
    assert.match(
      overlapError(one(undefined, '10.14.0.0/16'), two('cross')) ?? '',
      /WireGuard subnet 10\.14\.0\.0\/16 holds .*WireGuard subnet/,
    ));
  test('a service range holding the other’s pods', () =>
    assert.match(
      overlapError(one(undefined, undefined, '10.52.0.0/16'), two('cross')) ?? '',
      /cluster "one"'s service range 10\.52\.0\.0\/16 holds cluster "two"'s pod CIDR/,
    ));
});

describe('mirroredServices', () => {
  const svc = (name: string, spec: Record<string, unknown>, exported = true): KubeObject =>
    ({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace: 'ml', labels: exported ? { [exportLabel]: 'true' } : {} },
      spec,
    }) as KubeObject;

  test('a selector-less Service and an EndpointSlice at the clusterIP; headless ones refused by name', () => {
    const m = mirroredServices('one', [
      svc('gpu', {
        clusterIP: '10.43.0.7',
        selector: { app: 'gpu' },
        ports: [{ name: 'http', port: 80, targetPort: 8080 }],
      }),
      svc('dns', { clusterIP: 'None', ports: [{ port: 53 }] }),
      svc('private', { clusterIP: '10.43.0.8', ports: [{ port: 80 }] }, false),
    ]);
    assert.deepEqual(m.errors, [
      'Service ml/dns: spec.clusterIP "None" is not an address; only Services with a clusterIP are exported',
    ]);
    assert.deepEqual(m.objects, [
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'gpu', namespace: 'ml', labels: { [sourceLabel]: 'one' } },
        spec: { ports: [{ name: 'http', port: 80, protocol: 'TCP' }] },
      },
      {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: {
          name: 'gpu-one',
          namespace: 'ml',
          labels: {
            [sourceLabel]: 'one',
            'kubernetes.io/service-name': 'gpu',
            'endpointslice.kubernetes.io/managed-by': 'multicluster.kilo.squat.ai',
          },
        },
        addressType: 'IPv4',
        endpoints: [{ addresses: ['10.43.0.7'], conditions: { ready: true } }],
        ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
      },
    ]);
  });
});

describe('planChanges', () => {
  const mine = (name: string, allowedIPs: string[], extra: Record<string, unknown> = {}): KubeObject => ({
    apiVersion: 'kilo.squat.ai/v1alpha1',
    kind: 'Peer',
    metadata: { name, labels: { [sourceLabel]: 'two' }, resourceVersion: '7', ...extra },
    spec: { allowedIPs, publicKey: 'k' },
  });

  test('creates what is missing, rewrites what differs, deletes only its own leftovers, leaves others’ alone', () => {
    const want = [mine('b1', ['10.52.1.0/24']), mine('b2', ['10.52.2.0/24']), mine('b3', ['10.52.3.0/24'])];
    const have = [
      { ...mine('b1', ['10.52.1.0/24']), status: { extra: 1 } } as KubeObject,
      mine('b2', ['10.52.9.0/24']),
      mine('gone', ['10.52.4.0/24']),
      { ...mine('laptop', []), metadata: { name: 'laptop' } },
      { ...mine('b3', []), metadata: { name: 'b3', labels: { [sourceLabel]: 'three' } } },
    ];
    const plan = planChanges(want, have, 'two');
    assert.deepEqual(
      plan.changes.map((c) => `${c.op} ${c.object.metadata?.name ?? ''}`),
      ['replace b2', 'delete gone'],
    );
    assert.equal(plan.changes[0]!.object.metadata?.resourceVersion, '7', 'a replace is conditional on what was read');
    assert.deepEqual(plan.conflicts, [
      'Peer b3 exists and is not mirrored from cluster "two" (no label kilo.squat.ai/multicluster-source=two): left alone',
    ]);
  });

  test('fields the API server adds are no difference; a removed list item is', () => {
    const want = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 's', namespace: 'a', labels: { [sourceLabel]: 'one' } },
      spec: { ports: [{ port: 80, protocol: 'TCP' }] },
    } as KubeObject;
    const stored = {
      ...want,
      spec: { clusterIP: '10.53.0.1', ports: [{ port: 80, protocol: 'TCP', targetPort: 80 }], type: 'ClusterIP' },
    } as KubeObject;
    assert.deepEqual(planChanges([want], [stored], 'one').changes, []);
    const two = {
      ...stored,
      spec: {
        ports: [
          { port: 80, protocol: 'TCP' },
          { port: 81, protocol: 'TCP' },
        ],
      },
    } as KubeObject;
    assert.deepEqual(
      planChanges([want], [two], 'one').changes.map((c) => c.op),
      ['replace'],
    );
  });
});
