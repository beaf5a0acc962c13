import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { planOf } from '../../src/mesh/compute.js';
import { defaultMeshOptions } from '../../src/mesh/options.js';
import { parseCluster } from '../../src/model/parse.js';
import { snapshotNow } from '../../src/model/ready.js';
import { Cidr } from '../../src/net/cidr.js';
import { comparable } from './compare.js';

/** The shared vectors live beside the repository (../shared); CI lays them there too. */
const dir = process.env['KILO_CONFORMANCE_DIR'] ?? join(import.meta.dirname, '../../../shared/conformance/vectors');

test('conformance vectors are present', () => {
  assert.ok(existsSync(dir), `no conformance vectors at ${dir} (set KILO_CONFORMANCE_DIR)`);
  assert.ok(readdirSync(dir).filter((f) => f.endsWith('.json')).length > 0);
});

for (const file of existsSync(dir)
  ? readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .sort()
  : []) {
  const v = JSON.parse(readFileSync(join(dir, file), 'utf8'));
  test(`conformance ${file} ${v.name}`, () => {
    const cluster = parseCluster(v.cluster.items);
    const options = {
      ...defaultMeshOptions,
      granularity: v.options.meshGranularity,
      subnet: Cidr.parse(v.options.subnet),
      encapsulate: v.options.encapsulate,
      local: v.options.local,
    };
    const plan = planOf(cluster, v.options.node, options, snapshotNow(cluster.nodes));
    assert.deepEqual(comparable(plan), comparable(v.expected));
  });
}
