import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Annotation } from '../../src/model/annotations.js';
import { maxShownValue } from '../../src/model/errors.js';
import { parseCluster, type KubeObject } from '../../src/model/parse.js';
import { formatUnreachable, maxUnreachableBytes, parseUnreachable } from '../../src/model/relay-annotations.js';
import { node } from '../helpers/cluster.js';

const good = { location: 'eu', internalIP: '10.1.0.5/24', endpoint: '198.51.100.1:51820', podCIDR: '10.2.1.0/24' };
/** `n` node names of `width` characters each (node-0000… padded). */
const names = (n: number, width = 10) =>
  Array.from({ length: n }, (_, i) => `node-${String(i).padStart(width - 5, '0')}`);

test('kilo.squat.ai/unreachable holds 5 % of a 5,000-node mesh: 250 names of 30 characters', () => {
  const listed = names(250, 30);
  const value = formatUnreachable(listed)!;
  assert.ok(value.length <= maxUnreachableBytes);
  assert.deepEqual(parseUnreachable(value, 'Node "x"'), listed);
});

test('a list longer than the annotation holds is cut to the first names (sorted) that fit, the same every time', () => {
  const listed = names(1000);
  const value = formatUnreachable([...listed].reverse())!;
  assert.ok(value.length <= maxUnreachableBytes && value.length > maxUnreachableBytes - 11, `${value.length} bytes`);
  const kept = value.split(',');
  assert.deepEqual(kept, listed.slice(0, kept.length));
  assert.equal(formatUnreachable([]), null);
  assert.equal(formatUnreachable(['b', 'a', 'b']), 'a,b');
});

test('an oversize or malformed value drops its node with an error naming node, annotation and value (cut)', () => {
  const over = names(800).join(',');
  assert.ok(over.length > maxUnreachableBytes);
  const objects = [
    {
      ...node('over', good),
      metadata: {
        ...node('over', good).metadata,
        annotations: { ...node('over', good).metadata!.annotations, [Annotation.unreachable]: over },
      },
    },
    {
      ...node('bad', good),
      metadata: {
        ...node('bad', good).metadata,
        annotations: { ...node('bad', good).metadata!.annotations, [Annotation.unreachable]: 'a,B_C' },
      },
    },
    node('fine', { ...good, podCIDR: '10.2.2.0/24' }),
  ] as KubeObject[];
  const c = parseCluster(objects);
  assert.deepEqual(
    c.nodes.map((n) => n.name),
    ['fine'],
  );
  const [o, b] = c.errors;
  assert.match(
    o!.message,
    /^Node "over": field metadata\.annotations\["kilo\.squat\.ai\/unreachable"\]: longer than 8192 bytes \(8799\)/,
  );
  assert.ok(o!.message.includes(`"${over.slice(0, maxShownValue)}…"`), 'the value, cut');
  assert.ok(o!.message.length < 600);
  assert.match(b!.message, /^Node "bad": .*unreachable.*"B_C" is not a node name: "a,B_C"$/);
});
