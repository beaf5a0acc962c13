import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { isWireGuardKey } from '../../src/model/parse.js';

/** The definition the fast check replaced: it must accept and reject exactly the same strings. */
const definition = (value: string): boolean => /^[A-Za-z0-9+/]{43}=$/.test(value);

const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
/** Characters next to the alphabet's ranges and others a key is mistyped with. */
const near = ['@', '[', '`', '{', '*', ',', '-', '.', ':', '_', '=', ' ', '\n', '\0', '\x7f', 'é', 'Ａ', '\u{1F511}'];

const key = fc.array(fc.constantFrom(...alphabet), { minLength: 43, maxLength: 43 }).map((cs) => cs.join('') + '=');

/** A key with one character replaced, inserted or removed, or cut, or padded, or a key plus a line break. */
const nearKey = fc.oneof(
  fc
    .tuple(key, fc.nat(43), fc.constantFrom(...near, ...alphabet))
    .map(([k, i, c]) => k.slice(0, i) + c + k.slice(i + 1)),
  fc.tuple(key, fc.nat(44), fc.constantFrom(...near, ...alphabet)).map(([k, i, c]) => k.slice(0, i) + c + k.slice(i)),
  fc.tuple(key, fc.nat(43)).map(([k, i]) => k.slice(0, i) + k.slice(i + 1)),
  fc.tuple(key, fc.nat(44)).map(([k, n]) => k.slice(0, n)),
  key.map((k) => k + '='),
  key.map((k) => k.slice(0, 42) + '=='),
  key.map((k) => k + '\n'),
  key.map((k) => '\n' + k),
  key.map((k) => k.slice(0, 43)),
);

test('isWireGuardKey accepts and rejects exactly what /^[A-Za-z0-9+/]{43}=$/ does', () => {
  fc.assert(
    fc.property(
      fc.oneof(key, nearKey, fc.string({ maxLength: 50 }), fc.string({ unit: 'binary', maxLength: 46 })),
      (s) => {
        assert.equal(isWireGuardKey(s), definition(s), JSON.stringify(s));
      },
    ),
    { numRuns: 20_000 },
  );
});

test('isWireGuardKey on edge cases', () => {
  const cases: [string, boolean][] = [
    ['A'.repeat(43) + '=', true],
    ['/'.repeat(43) + '=', true],
    ['+'.repeat(43) + '=', true],
    ['z9'.repeat(21) + 'Z=', true],
    ['A'.repeat(44), false],
    ['A'.repeat(42) + '==', false],
    ['A'.repeat(43), false],
    ['A'.repeat(43) + '=\n', false],
    ['A'.repeat(43) + '= ', false],
    [' ' + 'A'.repeat(42) + '=', false],
    ['A'.repeat(42) + '-=', false],
    ['A'.repeat(42) + '_=', false],
    ['A'.repeat(42) + '\u0141=', false], // 'Ł': its low byte is 'A'
    ['A'.repeat(42) + '\u0100=', false],
    ['', false],
    ['=', false],
  ];
  for (const [s, want] of cases) {
    assert.equal(definition(s), want, `the definition on ${JSON.stringify(s)}`);
    assert.equal(isWireGuardKey(s), want, JSON.stringify(s));
  }
});
