import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../../src/model/parse.js';
import { clusterLocations, describeLocation, describeNat, natLocations } from '../../packages/lab/src/locations.js';

const node = (name: string, labels: Record<string, string>, annotations: Record<string, string> = {}): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name, labels, annotations },
});

test('locations as the cluster has them: the annotation over the topology label, as Kilo reads them', () => {
  const r = 'topology.kubernetes.io/region';
  const locations = clusterLocations([
    node('loc1-n1', { [r]: 'loc1' }),
    node('loc1-n2', { [r]: 'loc1' }, { 'kilo.squat.ai/location': 'loc2' }),
    node('loc2-n1', { [r]: 'loc2' }),
    node('bare', {}),
  ]);
  assert.deepEqual(
    [...locations],
    [
      ['loc1-n1', 'loc1'],
      ['loc1-n2', 'loc2'],
      ['loc2-n1', 'loc2'],
      ['bare', ''],
    ],
  );
  // loc2-n1 has no public address: its location, wherever the cluster puts it, is behind NAT.
  const nat = natLocations(
    [
      { name: 'loc1-n1', publicIP: '198.18.1.11' },
      { name: 'loc1-n2', publicIP: '198.18.1.12' },
      { name: 'loc2-n1', publicIP: null },
    ],
    locations,
  );
  assert.deepEqual([...nat], [['loc2', 'nat']]);
  assert.equal(describeLocation('loc2', nat), 'loc2, behind NAT');
  assert.equal(describeLocation('loc1', nat), 'loc1');
  assert.equal(describeLocation('', nat), '(no location)');
});

test('which NAT: a node built in a symmetric-NAT location makes its location read as behind a symmetric NAT', () => {
  const locations = new Map([
    ['loc1-n1', 'loc1'],
    ['loc2-n1', 'loc2'],
    ['loc3-n1', 'loc3'],
    ['loc4-n1', 'loc4'],
  ]);
  const nat = natLocations(
    [
      { name: 'loc1-n1', publicIP: null, location: 1 },
      { name: 'loc2-n1', publicIP: null, location: 2 },
      { name: 'loc3-n1', publicIP: null, location: 3 },
      { name: 'loc4-n1', publicIP: '198.18.4.11', location: 4 },
    ],
    locations,
    new Set([1, 3]),
  );
  assert.equal(describeLocation('loc1', nat), 'loc1, behind a symmetric NAT');
  assert.equal(describeLocation('loc2', nat), 'loc2, behind NAT');
  assert.equal(describeLocation('loc4', nat), 'loc4');
  assert.equal(describeNat(nat), 'behind NAT: loc2; behind a symmetric NAT: loc1, loc3');
  assert.equal(describeNat(new Map()), '');
});
