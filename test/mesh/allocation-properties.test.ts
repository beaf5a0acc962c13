/**
 * Properties of the WireGuard IP allocation (issue 35), over generated clusters and changes:
 * never two segments on one address, the same map on every node and in any order of the objects,
 * and in `stable` mode no segment's address moves when others come, go or stop checking in.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { NOW, type NodeSpec } from '../helpers/cluster.js';
import { addressMap, forced, objectsOf, published, ready, topologyOfSpecs, type Specs } from '../helpers/allocation.js';
import { applyChange } from '../helpers/allocation.js';
import type { Topology } from '../../src/mesh/topology.js';

const names = fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'k', 'm', 'x', 'z');
const locations = fc.constantFrom('0first', 'eu', 'us', 'ap', 'zz');
const granularity = fc.constantFrom('location' as const, 'cross' as const, 'full' as const);

/** A node: its location, and sometimes a forced address, a stale publication or a stale last-seen. */
const nodeSpec = fc.record({
  location: locations,
  force: fc.option(fc.integer({ min: 0, max: 12 }), { freq: 4 }),
  publish: fc.option(fc.integer({ min: 0, max: 12 }), { freq: 3 }),
  stale: fc.boolean(),
});

type Gen = { location: string; force: number | null; publish: number | null; stale: boolean };

function specOf(g: Gen): NodeSpec {
  return ready(g.location, {
    ...(g.force === null ? {} : forced(`10.4.0.${g.force}`)),
    ...(g.publish === null ? {} : { wireGuardIP: `10.4.0.${g.publish}/16` }),
    ...(g.stale ? { lastSeen: NOW - 3600 } : {}),
  });
}

const cluster = fc.uniqueArray(fc.tuple(names, nodeSpec), { minLength: 1, maxLength: 10, selector: ([n]) => n });

/** Every ready node's map of segment → address; asserts they agree and hold no address twice. */
function agreedMap(specs: Specs, options: object): Map<string, string> | null {
  const hosts = [...specs].filter(([, s]) => s.lastSeen === undefined).map(([n]) => n);
  if (hosts.length === 0) return null;
  const maps = hosts.map((h) => addressMap(topologyOfSpecs(specs, h, options)));
  for (const m of maps) assert.deepEqual(m, maps[0], 'two nodes compute different maps');
  const addresses = [...maps[0]!.values()];
  assert.equal(new Set(addresses).size, addresses.length, `a duplicate address: ${JSON.stringify([...maps[0]!])}`);
  return maps[0]!;
}

test('any cluster, either rule: no duplicate, every node computes the same map, whatever the order of the objects', () => {
  fc.assert(
    fc.property(
      cluster,
      granularity,
      fc.constantFrom('kilo' as const, 'stable' as const),
      fc.integer(),
      (nodes, g, mode, seed) => {
        const specs = new Map(nodes.map(([n, s]) => [n, specOf(s)]));
        const options = { granularity: g, wireGuardIPAllocation: mode };
        const map = agreedMap(specs, options);
        if (!map) return;
        const objects = objectsOf(specs);
        const shuffled = [...objects].sort((x, y) => hash(x.metadata!.name!, seed) - hash(y.metadata!.name!, seed));
        const host = [...specs].find(([, s]) => s.lastSeen === undefined)![0];
        assert.deepEqual(addressMap(topologyOfSpecs(shuffled, host, options)), map);
      },
    ),
    { numRuns: 300 },
  );
});

/** A change to a cluster: a node joins (in any location, a new one too), is deleted, or stops checking in. */
const change = fc.oneof(
  fc.record({ kind: fc.constant('add' as const), name: fc.stringMatching(/^[a-z0-9]{1,3}$/), location: locations }),
  fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('stale' as const), pick: fc.nat() }),
);

test('stable: nodes and locations that come, go or stop checking in move no other segment, and the published map never holds a duplicate', () => {
  fc.assert(
    fc.property(
      fc.uniqueArray(fc.tuple(names, locations), { minLength: 1, maxLength: 8, selector: ([n]) => n }),
      fc.array(change, { minLength: 1, maxLength: 8 }),
      fc.constantFrom('location' as const, 'cross' as const),
      (initial, changes, g) => {
        const options = { granularity: g, wireGuardIPAllocation: 'stable' as const };
        let specs: Map<string, NodeSpec> = new Map(initial.map(([n, l]) => [n, ready(l)]));
        let before = agreedMap(specs, options)!;
        specs = published(specs, anyTopology(specs, options));
        for (const c of changes) {
          if (!applyChange(specs, c)) continue;
          const after = agreedMap(specs, options)!;
          for (const [key, address] of after) {
            if (before.has(key)) assert.equal(address, before.get(key), `${key} moved after ${JSON.stringify(c)}`);
          }
          specs = published(specs, anyTopology(specs, options));
          before = after;
        }
      },
    ),
    { numRuns: 200 },
  );
});

function anyTopology(specs: Specs, options: object): Topology {
  const host = [...specs].find(([, s]) => s.lastSeen === undefined)![0];
  return topologyOfSpecs(specs, host, options);
}

/** A permutation key: the name hashed with the seed. */
function hash(s: string, seed: number): number {
  let h = seed | 0;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x9e3779b1);
  return h;
}
