import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { allocationProblems } from '../../src/mesh/allocation-report.js';
import { stableGraceSeconds } from '../../src/mesh/allocation.js';
import { meshOptions, NOW, type NodeSpec } from '../helpers/cluster.js';
import { parseCluster } from '../../src/model/parse.js';
import { Cidr } from '../../src/net/cidr.js';
import {
  addressMap,
  forced,
  nodeAddresses,
  objectsOf,
  published,
  ready,
  topologyOfSpecs,
  type Specs,
} from '../helpers/allocation.js';

const stable = { wireGuardIPAllocation: 'stable' } as const;
const cross = { granularity: 'cross' } as const;

const specs = (entries: [string, NodeSpec][]): Map<string, NodeSpec> => new Map(entries);
const problems = (s: Specs, options = {}) =>
  allocationProblems(parseCluster(objectsOf(s)), meshOptions(options), NOW).map((e) => e.message);

describe('kilo mode', () => {
  test("without a forced address it is Kilo's rule: a location that sorts first shifts the others", () => {
    const before = specs([
      ['b1', ready('b')],
      ['c1', ready('c')],
    ]);
    assert.deepEqual(Object.fromEntries(addressMap(topologyOfSpecs(before, 'b1'))), {
      'location:b': '10.4.0.1',
      'location:c': '10.4.0.2',
    });
    const after = new Map([['a1', ready('a')], ...before]);
    assert.deepEqual(Object.fromEntries(addressMap(topologyOfSpecs(after, 'b1'))), {
      'location:a': '10.4.0.1',
      'location:b': '10.4.0.2',
      'location:c': '10.4.0.3',
    });
  });

  test('a forced address is honoured; the others take the free addresses in key order', () => {
    const s = specs([
      ['a1', ready('a')],
      ['b1', ready('b', forced('10.4.0.1'))],
      ['c1', ready('c')],
    ]);
    assert.deepEqual(Object.fromEntries(addressMap(topologyOfSpecs(s, 'a1'))), {
      'location:a': '10.4.0.2',
      'location:b': '10.4.0.1',
      'location:c': '10.4.0.3',
    });
    assert.deepEqual(problems(s), []);
  });
});

describe('force-wireguard-ip', () => {
  for (const mode of ['kilo', 'stable'] as const) {
    test(`${mode}: two segments forcing one address: the first by key keeps it, the other gets an error and another address`, () => {
      const s = specs([
        ['x', ready('x', forced('10.4.0.7'))],
        ['y', ready('y', forced('10.4.0.7'))],
      ]);
      const options = { ...cross, wireGuardIPAllocation: mode };
      const t = topologyOfSpecs(s, 'y', options);
      assert.deepEqual(Object.fromEntries(addressMap(t)), { 'node:x': '10.4.0.7', 'node:y': '10.4.0.1' });
      const expected = [
        'Node "y": field metadata.annotations["kilo.squat.ai/force-wireguard-ip"]: already held by node "x" (forced by Node "x"), which keeps it; ignored: node "y" takes another address: "10.4.0.7"',
      ];
      assert.deepEqual(
        t.conflicts?.map((e) => e.message),
        expected,
      );
      assert.deepEqual(problems(s, options), expected);
    });
  }

  test('stable: of two forcing one address, the segment that already holds it keeps it, whatever the names', () => {
    const s = specs([
      ['x', ready('x', forced('10.4.0.7'))],
      ['y', ready('y', { ...forced('10.4.0.7'), wireGuardIP: '10.4.0.7/16' })],
    ]);
    const t = topologyOfSpecs(s, 'x', { ...cross, ...stable });
    assert.equal(addressMap(t).get('node:y'), '10.4.0.7');
    assert.equal(addressMap(t).get('node:x'), '10.4.0.1');
    assert.match(t.conflicts![0]!.message, /^Node "x": .*already held by node "y"/);
  });

  test('an address outside --subnet (or its network or last address) is an error for that node, which takes an allocated one', () => {
    for (const bad of ['10.5.0.1', '10.4.0.0', '10.4.255.255', 'fd00::1']) {
      const s = specs([
        ['a', ready('a', forced(bad))],
        ['b', ready('b')],
      ]);
      const t = topologyOfSpecs(s, 'b', cross);
      assert.deepEqual(Object.fromEntries(addressMap(t)), { 'node:a': '10.4.0.1', 'node:b': '10.4.0.2' });
      assert.deepEqual(
        t.conflicts?.map((e) => e.message),
        [
          `Node "a": field metadata.annotations["kilo.squat.ai/force-wireguard-ip"]: not a host address of the WireGuard subnet 10.4.0.0/16 (ignored: its node "a" takes an allocated address): "${bad}"`,
        ],
      );
    }
  });

  test('a value that is no address drops the node, as any malformed annotation does', () => {
    const c = parseCluster(objectsOf(specs([['a', ready('a', forced('10.4.0.300'))]])));
    assert.deepEqual(
      c.errors.map((e) => e.message),
      ['Node "a": field metadata.annotations["kilo.squat.ai/force-wireguard-ip"]: not an IP address: "10.4.0.300"'],
    );
    // With a mask, as wireguard-ip is written: the address counts.
    const t = topologyOfSpecs(specs([['a', ready('a', forced('10.4.0.9/16'))]]), 'a');
    assert.equal(addressMap(t).get('location:a'), '10.4.0.9');
  });

  test('location granularity: the force applies to the location; two different ones: the lower address, an error for the other node', () => {
    const s = specs([
      ['eu-a', ready('eu', forced('10.4.0.20'))],
      ['eu-b', ready('eu', forced('10.4.0.10'))],
      ['us-a', ready('us')],
    ]);
    for (const mode of ['kilo', 'stable'] as const) {
      const t = topologyOfSpecs(s, 'us-a', { wireGuardIPAllocation: mode });
      assert.deepEqual(Object.fromEntries(addressMap(t)), { 'location:eu': '10.4.0.10', 'location:us': '10.4.0.1' });
      assert.deepEqual(
        t.conflicts?.map((e) => e.message),
        [
          'Node "eu-a": field metadata.annotations["kilo.squat.ai/force-wireguard-ip"]: its location "eu" takes 10.4.0.10 (forced by Node "eu-b"); this address is ignored: "10.4.0.20"',
        ],
      );
    }
  });
});

describe('stable mode', () => {
  test('a location whose name sorts first takes a free address: no other segment moves', () => {
    const before = specs([
      ['b1', ready('b')],
      ['b2', ready('b')],
      ['c1', ready('c')],
    ]);
    const t0 = topologyOfSpecs(before, 'b1', stable);
    const after = new Map([['a1', ready('a')], ...published(before, t0)]);
    const t1 = topologyOfSpecs(after, 'b1', stable);
    assert.deepEqual(Object.fromEntries(addressMap(t1)), {
      'location:a': '10.4.0.3',
      'location:b': '10.4.0.1',
      'location:c': '10.4.0.2',
    });
  });

  test('switching from kilo keeps every address the leaders published', () => {
    const s = specs([
      ['a1', ready('a', { wireGuardIP: '10.4.0.1/16' })],
      ['b1', ready('b', { wireGuardIP: '10.4.0.2/16' })],
      ['b2', ready('b', { wireGuardIP: '' })],
    ]);
    assert.deepEqual(addressMap(topologyOfSpecs(s, 'a1', stable)), addressMap(topologyOfSpecs(s, 'a1')));
  });

  test('a node that is not ready holds its address for the grace period, then gives it up', () => {
    const base = specs([
      ['a', ready('a', { wireGuardIP: '10.4.0.1/16' })],
      ['b', ready('b', { wireGuardIP: '10.4.0.2/16', lastSeen: NOW - 3600 })],
      ['new', ready('new')],
    ]);
    const t = topologyOfSpecs(base, 'a', { ...cross, ...stable });
    assert.deepEqual(Object.fromEntries(addressMap(t)), { 'node:a': '10.4.0.1', 'node:new': '10.4.0.3' });
    const lapsed = new Map(base).set('b', { ...base.get('b')!, lastSeen: NOW - stableGraceSeconds - 1 });
    assert.equal(addressMap(topologyOfSpecs(lapsed, 'a', { ...cross, ...stable })).get('node:new'), '10.4.0.2');
    // Back within the grace period, it has its own address again.
    const back = new Map(base).set('b', { ...base.get('b')!, lastSeen: NOW });
    assert.equal(addressMap(topologyOfSpecs(back, 'a', { ...cross, ...stable })).get('node:b'), '10.4.0.2');
  });

  test('a deleted Node object frees its address at once', () => {
    const s = specs([
      ['a', ready('a', { wireGuardIP: '10.4.0.2/16' })],
      ['new', ready('new')],
    ]);
    assert.equal(addressMap(topologyOfSpecs(s, 'a', { ...cross, ...stable })).get('node:new'), '10.4.0.1');
  });

  test('a new leader of a location keeps its address: the members publish it', () => {
    const s = specs([
      ['eu-a', ready('eu')],
      ['eu-b', ready('eu')],
      ['us-a', ready('us')],
    ]);
    const t0 = topologyOfSpecs(s, 'us-a', stable);
    const steady = published(s, t0);
    // eu-b wins leadership (annotated), a location sorting first joins, and eu-a leaves.
    steady.set('eu-b', { ...steady.get('eu-b')!, leader: true });
    steady.set('ap-a', ready('ap'));
    steady.delete('eu-a');
    const t1 = topologyOfSpecs(steady, 'us-a', stable);
    assert.equal(t1.segments.find((s) => s.key === 'location:eu')!.leader.name, 'eu-b');
    assert.equal(addressMap(t1).get('location:eu'), addressMap(t0).get('location:eu'));
    assert.equal(addressMap(t1).get('location:us'), addressMap(t0).get('location:us'));
  });

  test('two segments publishing one address (a race): one keeps it, the other takes the lowest free; never a duplicate', () => {
    const s = specs([
      ['x', ready('x', { wireGuardIP: '10.4.0.1/16' })],
      ['y', ready('y', { wireGuardIP: '10.4.0.1/16' })],
      ['z', ready('z', { wireGuardIP: '10.4.0.2/16' })],
    ]);
    const m = addressMap(topologyOfSpecs(s, 'x', { ...cross, ...stable }));
    assert.deepEqual(Object.fromEntries(m), { 'node:x': '10.4.0.1', 'node:y': '10.4.0.3', 'node:z': '10.4.0.2' });
  });

  test('a published address outside --subnet is ignored', () => {
    const s = specs([
      ['x', ready('x', { wireGuardIP: '10.9.0.5/16' })],
      ['y', ready('y')],
    ]);
    assert.deepEqual(Object.fromEntries(nodeAddresses(topologyOfSpecs(s, 'x', { ...cross, ...stable }))), {
      x: '10.4.0.1',
      y: '10.4.0.2',
    });
  });

  test('a subnet held full by segments that are gone gives the oldest one back', () => {
    const s = specs([
      ['a', ready('a', { wireGuardIP: '10.4.0.1/30' })],
      ['gone', ready('g', { wireGuardIP: '10.4.0.2/30', lastSeen: NOW - 600 })],
      ['new', ready('n')],
    ]);
    const m = addressMap(topologyOfSpecs(s, 'a', { ...cross, ...stable, subnet: Cidr.parse('10.4.0.0/30') }));
    assert.deepEqual(Object.fromEntries(m), { 'node:a': '10.4.0.1', 'node:new': '10.4.0.2' });
  });
});
