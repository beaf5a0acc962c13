/**
 * The quick yeses of schema.ts (plainObjectHead, plainNode, plainPeer) stand in for zod on the common path, so
 * each may accept only what its zod schema accepts: else a malformed object would reach parse.ts
 * unchecked. Checked on generated near-misses of every field's type.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { nodeShape, objectShape, peerShape, plainNode, plainObjectHead, plainPeer } from '../../src/model/schema.js';
import { node, peer } from '../helpers/cluster.js';

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
        assert.ok(objectShape().safeParse(o).success, JSON.stringify(o));
      }
      if (plainNode(o)) {
        nodes++;
        assert.ok(nodeShape().safeParse(o).success, JSON.stringify(o));
      }
    }),
    { numRuns: 5000 },
  );
  // Else the property says nothing.
  assert.ok(heads > 500 && nodes > 100, `accepted ${heads} heads and ${nodes} nodes`);
  const n = node('a', { location: 'eu', internalIP: '10.1.0.5/24', endpoint: '198.51.100.1:51820' });
  assert.ok(plainObjectHead(n) && plainNode(n));
});

const number = fc.oneof(fc.integer(), fc.double(), fc.constantFrom(Infinity, -Infinity, NaN, 0, -0, 51820));
/** A hole where a string should be. */
const sparse: string[] = [];
sparse[1] = '10.0.0.1/32';
const nullishText = fc.oneof(text, fc.constant(null), fc.constant(undefined), wrong, number);
const peerSpec = fc.oneof(
  wrong,
  fc.record(
    {
      allowedIPs: fc.oneof(
        wrong,
        fc.array(text, { maxLength: 3 }),
        fc.array(value, { maxLength: 3 }),
        fc.constant(sparse),
      ),
      publicKey: value,
      endpoint: fc.oneof(
        wrong,
        fc.record(
          {
            dnsOrIP: fc.oneof(wrong, fc.record({ dns: nullishText, ip: nullishText }, { requiredKeys: [] })),
            port: fc.oneof(number, value),
          },
          { requiredKeys: [] },
        ),
      ),
      persistentKeepalive: fc.oneof(nullishText, number),
      presharedKey: nullishText,
    },
    { requiredKeys: [] },
  ),
);
const peerObject = fc.oneof(
  wrong,
  fc.record({ apiVersion: value, kind: value, metadata, spec: peerSpec }, { requiredKeys: [] }),
  fc.record({
    kind: fc.constant('Peer'),
    metadata: fc.record({
      name: fc.stringMatching(/^[a-z0-9]([-a-z0-9.]{0,8}[a-z0-9])?$/),
      annotations: stringMap,
      labels: stringMap,
    }),
    spec: fc.record({
      allowedIPs: fc.oneof(fc.array(text, { minLength: 1, maxLength: 3 }), fc.array(value, { maxLength: 2 })),
      publicKey: text,
      endpoint: fc.oneof(
        fc.constant(undefined),
        fc.constant(null),
        fc.record({
          dnsOrIP: fc.oneof(fc.constant(null), fc.record({ dns: nullishText, ip: nullishText }, { requiredKeys: [] })),
          port: number,
        }),
      ),
      persistentKeepalive: fc.oneof(fc.constant(undefined), fc.constant(null), number, text),
      presharedKey: nullishText,
    }),
  }),
);

test('plainPeer accepts only what zod accepts, and the common Peer', () => {
  let peers = 0;
  let rejected = 0;
  fc.assert(
    fc.property(peerObject, (o) => {
      if (plainPeer(o)) {
        peers++;
        assert.ok(peerShape().safeParse(o).success, JSON.stringify(o));
      } else if (peerShape().safeParse(o).success) rejected++;
    }),
    { numRuns: 5000 },
  );
  assert.ok(peers > 150, `accepted ${peers} Peers`);
  // zod accepts little that the quick yes does not (a number where a string may stand never is).
  assert.ok(rejected < peers / 10, `${rejected} Peers only zod accepted, ${peers} both`);
  for (const p of [
    peer('a', { allowedIPs: ['10.5.0.1/32'] }),
    peer('b', { allowedIPs: ['10.5.0.2/32', 'fd05::2/128'], endpoint: '198.51.100.9:51820', keepalive: 25 }),
    peer('c', { allowedIPs: ['10.5.0.3/32'], endpoint: 'vpn.example.com:51820', presharedKey: 'x', keepalive: '10' }),
  ])
    assert.ok(plainPeer(p), JSON.stringify(p));
});
