import assert from 'node:assert/strict';
import { test } from 'node:test';
import { lanMistakes } from '../../src/agent/health-lan.js';
import { kiloNode } from '../helpers/cluster.js';

const clear = { encapsulate: 'never', local: true } as const;
const mesh = (granularity: 'location' | 'cross' | 'subnet' | 'full') => ({ ...clear, granularity });

/** The lab after `kubectl annotate node loc1-n2 kilo.squat.ai/location=loc2`. */
const moved = [
  kiloNode('loc1-n1', { location: 'loc1', internalIP: '192.168.1.11/24' }),
  kiloNode('loc1-n2', { location: 'loc2', internalIP: '192.168.1.12/24' }),
  kiloNode('loc2-n1', { location: 'loc2', internalIP: '192.168.2.11/24' }),
  kiloNode('loc2-n2', { location: 'loc2', internalIP: '192.168.2.12/24' }),
];

test('a node moved into a location whose LAN it is not on: its pairs with every mate, the odd one named first', () => {
  const { mistakes, total } = lanMistakes(moved, mesh('cross'));
  assert.equal(total, 2);
  assert.deepEqual(
    mistakes.map((m) => [m.node, m.mate]),
    [
      ['loc1-n2', 'loc2-n1'],
      ['loc1-n2', 'loc2-n2'],
    ],
  );
  assert.equal(
    mistakes[0]!.reason,
    "loc1-n2's internal IP 192.168.1.12/24 is not on loc2-n1's network 192.168.2.0/24: same location loc2, different LANs (use subnet granularity, or fix the location)",
  );
  assert.equal(lanMistakes(moved, mesh('location')).total, 2);
});

test('subnet and full granularity plan no such pair; nor encapsulation, --local=false, a CNI; nor one LAN, nor nested prefixes', () => {
  assert.equal(lanMistakes(moved, mesh('subnet')).total, 0);
  assert.equal(lanMistakes(moved, { ...mesh('cross'), encapsulate: 'crosssubnet' }).total, 0);
  assert.equal(lanMistakes(moved, { ...mesh('cross'), local: false }).total, 0);
  assert.equal(lanMistakes(moved, { ...mesh('cross'), compatibility: 'flannel' }).total, 0);
  assert.equal(lanMistakes(moved, mesh('full')).total, 0);
  const fine = [
    kiloNode('a', { location: 'x', internalIP: '10.0.0.1/16' }),
    kiloNode('b', { location: 'x', internalIP: '10.0.1.1/24' }),
    kiloNode('c', { location: 'x', internalIP: '10.0.2.1/16' }),
  ];
  assert.equal(lanMistakes(fine, mesh('cross')).total, 0);
});

test("`only`: one node's own pairs, from either side; a node without an internal IP is never a mate", () => {
  assert.deepEqual(
    lanMistakes(moved, mesh('cross'), { only: 'loc2-n1' }).mistakes.map((m) => [m.node, m.mate]),
    [['loc1-n2', 'loc2-n1']],
  );
  assert.equal(lanMistakes(moved, mesh('cross'), { only: 'loc1-n2' }).total, 2);
  assert.equal(lanMistakes(moved, mesh('cross'), { only: 'loc1-n1' }).total, 0);
  const alone = [...moved, kiloNode('bare', { location: 'loc2' })];
  assert.equal(lanMistakes(alone, mesh('cross')).total, 2);
});

test('the list is bounded, the count is not: two LANs of 300 nodes in one location', () => {
  const nodes = [];
  for (let i = 0; i < 600; i++)
    nodes.push(
      kiloNode(`n${i}`, {
        location: 'big',
        internalIP: `10.${i % 2}.${Math.floor(i / 400)}.${(Math.floor(i / 2) % 200) + 1}/16`,
      }),
    );
  const r = lanMistakes(nodes, mesh('cross'), { limit: 10 });
  assert.equal(r.mistakes.length, 10);
  assert.equal(r.total, 300 * 300);
});
