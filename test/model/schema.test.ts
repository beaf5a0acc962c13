/**
 * The quick yeses of schema.ts (plainObjectHead, plainNode) stand in for zod on the common path, so
 * each may accept only what its zod schema accepts: else a malformed object would reach parse.ts
 * unchecked. Checked on generated near-misses of every field's type.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { nodeShape, objectShape, plainNode, plainObjectHead } from '../../src/model/schema.js';
import { node } from '../helpers/cluster.js';

const wrong = fc.oneof(
  fc.constant(null),
  fc.constant(undefined),
  fc.integer(),
  fc.boolean(),
  fc.array(fc.string({ maxLength: 3 }), { maxLength: 2 }),
  fc.dictionary(fc.string({ maxLength: 3 }), fc.string({ maxLength: 3 }), { maxKeys: 2 }),
);
const text = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.stringMatching(/^[a-z0-9.-]{0,12}$/),
  fc.constantFrom('', 'a', 'node-1', 'a.b', 'a..b', 'UPPER', '-a', 'a-', 'a'.repeat(253), 'a'.repeat(254)),
);
const value = fc.oneof(text, wrong);
const stringMap = fc.oneof(
  wrong,
  fc.dictionary(fc.string({ maxLength: 8 }), text, { maxKeys: 3 }),
  fc.dictionary(fc.string({ maxLength: 8 }), value, { maxKeys: 3 }),
);
const metadata = fc.oneof(
  wrong,
  fc.record({ name: value, annotations: stringMap, labels: stringMap }, { requiredKeys: [] }),
);
const spec = fc.oneof(wrong, fc.record({ podCIDR: value }, { requiredKeys: [] }));
const object = fc.oneof(
  wrong,
  fc.record({ apiVersion: value, kind: value, metadata, spec }, { requiredKeys: [] }),
  fc.record({ apiVersion: text, kind: fc.constant('Node'), metadata, spec }),
  fc.record({
    kind: fc.constant('Node'),
    metadata: fc.record({
      name: fc.stringMatching(/^[a-z0-9]([-a-z0-9.]{0,8}[a-z0-9])?$/),
      annotations: stringMap,
      labels: stringMap,
    }),
    spec,
  }),
);

test('plainObjectHead and plainNode accept only what zod accepts, and the common Node', () => {
  let heads = 0;
  let nodes = 0;
  fc.assert(
    fc.property(object, (o) => {
      if (plainObjectHead(o)) {
        heads++;
        assert.ok(objectShape.safeParse(o).success, JSON.stringify(o));
      }
      if (plainNode(o)) {
        nodes++;
        assert.ok(nodeShape.safeParse(o).success, JSON.stringify(o));
      }
    }),
    { numRuns: 5000 },
  );
  // Else the property says nothing.
  assert.ok(heads > 500 && nodes > 100, `accepted ${heads} heads and ${nodes} nodes`);
  const n = node('a', { location: 'eu', internalIP: '10.1.0.5/24', endpoint: '198.51.100.1:51820' });
  assert.ok(plainObjectHead(n) && plainNode(n));
});
