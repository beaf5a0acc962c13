import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ParseMemo } from '../../src/agent/parse-memo.js';
import { Annotation } from '../../src/model/annotations.js';
import { parseCluster, type KubeObject } from '../../src/model/parse.js';
import { node, peer } from '../helpers/cluster.js';

/** `o` as a heartbeat replaces it in the agent's cache: a new object, last-seen and path-health moved. */
function beat(o: KubeObject, lastSeen: number): KubeObject {
  const next = structuredClone(o);
  next.metadata!.annotations![Annotation.lastSeen] = String(lastSeen);
  next.metadata!.annotations![Annotation.pathHealth] = `beat ${lastSeen}`;
  return next;
}

const a0 = node('a', { location: 'x', internalIP: '10.1.0.1/24', endpoint: '198.51.100.1:51820', lastSeen: 100 });
const b0 = node('b', { location: 'x', internalIP: '10.1.0.2/24', endpoint: '198.51.100.2:51820', lastSeen: 100 });

test('a carried heartbeat parses as a fresh parse of the new object, made once per object', () => {
  const memo = new ParseMemo();
  parseCluster([a0, b0], { memo });
  memo.settle();
  const a1 = beat(a0, 130);
  const a2 = beat(a1, 160);
  assert.equal(memo.carry(a0, a1, 130), true);
  // Two heartbeats between passes: the second's base is the first's.
  assert.equal(memo.carry(a1, a2, 160), true);
  const got = parseCluster([a2, b0], { memo });
  memo.settle();
  assert.deepEqual(got.nodes, parseCluster([a2, b0]).nodes);
  assert.equal(got.nodes[0]!.lastSeen, 160);
  // Asked again (the next pass, no heartbeat since): the same object, not another copy.
  assert.equal(parseCluster([a2, b0], { memo }).nodes[0], got.nodes[0]);
  memo.settle();
  // The replaced object is no longer served the new parse, nor the old.
  assert.equal(memo.get(a1), undefined);
});

test('a heartbeat over an object whose parse is not known is not carried: the pass parses it', () => {
  const memo = new ParseMemo();
  const a1 = beat(a0, 130);
  assert.equal(memo.carry(a0, a1, 130), false);
  assert.equal(memo.get(a1), undefined);
  // Nor over an invalid node's.
  const bad = node('bad', { endpoint: 'nonsense', lastSeen: 100 });
  assert.equal(parseCluster([bad], { memo }).errors.length, 1);
  assert.equal(memo.carry(bad, beat(bad, 130), 130), false);
});

test('a change after a heartbeat is parsed afresh, and the carried entry goes at the next settle', () => {
  const memo = new ParseMemo();
  parseCluster([a0, b0], { memo });
  memo.settle();
  const a1 = beat(a0, 130);
  memo.carry(a0, a1, 130);
  const moved = structuredClone(a1);
  moved.metadata!.annotations![Annotation.location] = 'y';
  const got = parseCluster([moved, b0], { memo });
  assert.equal(got.nodes[0]!.location, 'y');
  assert.equal(memo.carriedCount, 1);
  memo.settle();
  assert.equal(memo.carriedCount, 0);
  // And a heartbeat over the changed object carries its parse, not the old one's.
  const moved1 = beat(moved, 160);
  assert.equal(memo.carry(moved, moved1, 160), true);
  const next = parseCluster([moved1, b0], { memo }).nodes[0]!;
  assert.equal(next.location, 'y');
  assert.equal(next.lastSeen, 160);
});

test('a deleted node leaves nothing carried; an object of another kind with its name is not served its parse', () => {
  const memo = new ParseMemo();
  parseCluster([a0, b0], { memo });
  memo.settle();
  const b1 = beat(b0, 130);
  memo.carry(b0, b1, 130);
  const namesake = peer('b', { allowedIPs: ['10.5.0.1/32'] });
  const got = parseCluster([a0, namesake], { memo });
  assert.equal(got.nodes.length, 1);
  assert.equal(got.peers.length, 1);
  memo.settle();
  assert.equal(memo.carriedCount, 0);
  assert.equal(memo.get(b1), undefined);
});
