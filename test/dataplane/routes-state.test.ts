import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { Cidr, IP } from '../../src/net/cidr.js';
import { isCanonicalIPv4 } from '../../src/dataplane/routes/state.js';

test('a canonical IPv4 address or prefix is exactly what IP and Cidr read as their own text', () => {
  const octet = fc.oneof(
    fc.integer({ min: 0, max: 300 }).map(String),
    fc.integer({ min: 0, max: 99 }).map((n) => `0${n}`),
    fc.constantFrom('', '-1', '1e2', ' 1', '٣', '1234'),
  );
  const quad = fc.array(octet, { minLength: 3, maxLength: 5 }).map((parts) => parts.join('.'));
  const length = fc.oneof(fc.integer({ min: 0, max: 40 }).map(String), fc.constantFrom('', '08', '3x', '/1'));
  const valid = fc
    .tuple(fc.integer({ min: 0, max: 2 ** 32 - 1 }), fc.integer({ min: 0, max: 32 }))
    .map(([v, bits]) => `${[24, 16, 8, 0].map((s) => (v >>> s) & 0xff).join('.')}/${bits}`);
  const masked = valid.map((t) => Cidr.parse(t).networkText);
  const noise = fc.string({ unit: fc.constantFrom(...'0123456789./x: '), maxLength: 20 });
  const prefix = fc.oneof(
    fc.tuple(quad, length).map(([q, l]) => `${q}/${l}`),
    valid,
    masked,
    noise,
    quad,
  );
  fc.assert(
    fc.property(prefix, (text) => {
      const c = Cidr.tryParse(text);
      assert.equal(isCanonicalIPv4(text, true), c !== null && c.family === 4 && c.networkText === text, text);
      const ip = IP.tryParse(text);
      assert.equal(isCanonicalIPv4(text, false), ip !== null && ip.family === 4 && ip.text === text, text);
    }),
    { numRuns: 20_000 },
  );
});
