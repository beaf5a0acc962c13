/**
 * writeIndentedJson (src/cli/json-output.ts) writes in pieces what `JSON.stringify(value, null, 2)`
 * and a newline write whole: the same text, whatever the value.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { writeIndentedJson } from '../../src/cli/json-output.js';

function pieces(value: unknown): string[] {
  const out: string[] = [];
  writeIndentedJson(value, (text) => out.push(text));
  return out;
}

function assertSame(value: unknown): void {
  assert.equal(pieces(value).join(''), `${JSON.stringify(value, null, 2)}\n`);
}

const peer = (i: number) => ({
  kind: 'segment',
  names: [`node-${i}`],
  publicKey: `key ${i} "quoted" \\ é ☃ \u2028`,
  allowedIPs: i % 3 === 0 ? [] : [`10.${i >> 8}.${i & 255}.0/24`],
  persistentKeepalive: i % 2,
  presharedKey: null,
  endpoint: i % 5 === 0 ? undefined : { host: 'a', port: i },
  nested: { deeper: [{ x: [1, [2, []]] }, {}] },
});

test('a plan-like object with long arrays: the same text, and in more than one piece', () => {
  const plan = {
    node: 'node-0',
    leader: true,
    fwmark: null,
    segment: { leader: 'node-0', nodes: ['node-0'] },
    peers: Array.from({ length: 1000 }, (_, i) => peer(i)),
    routes: Array.from({ length: 257 }, (_, i) => ({ dst: `10.0.${i}.0/24`, via: i % 2 ? null : '1.2.3.4' })),
    rules: Array.from({ length: 256 }, (_, i) => i),
    empty: [],
    firewall: { chains: [{ name: 'KILO-NAT', rules: ['-A', '-B'] }] },
  };
  assertSame(plan);
  assert.ok(pieces(plan).length > 5, 'the long arrays were written in pieces');
});

test('values JSON.stringify leaves out or turns to null, at every place', () => {
  const long = Array.from({ length: 600 }, (_, i) =>
    i % 4 === 0 ? undefined : i % 4 === 1 ? () => i : i % 4 === 2 ? Symbol('s') : { u: undefined, f: () => 0, v: i },
  );
  assertSame({ a: undefined, b: () => 1, c: Symbol('c'), long, d: 1, e: undefined });
  assertSame({ a: undefined, b: () => 1 });
  assertSame({ only: undefined, then: [] });
  assertSame({ holes: Array.from({ length: 300 }).concat([, 1]) });
});

test('keys that need escaping, and __proto__ as an own key', () => {
  const o = JSON.parse('{"__proto__": [1, 2], "a\\"b": {"\\n": 1}, "é☃": "x", "": ""}') as unknown;
  assertSame(o);
  assertSame({ 'k\u2028': Array.from({ length: 300 }, (_, i) => ({ [`\u0000${i}`]: i })) });
});

test('values that are not plain objects are written whole, as JSON.stringify writes them', () => {
  class Point {
    constructor(
      readonly x: number,
      readonly y: number,
    ) {}
  }
  const withToJSON = { toJSON: () => ({ replaced: Array.from({ length: 300 }, (_, i) => i) }) };
  const big = Array.from({ length: 300 }, (_, i) => ({ i }));
  for (const v of [{}, [], big, null, 0, 'text', true, new Point(1, 2), withToJSON, new Date(0), Object.create(null)])
    assertSame(v);
  assert.equal(pieces(big).length, 1);
  // An array with its own toJSON is written whole too.
  const arrayWithToJSON = Object.assign(
    Array.from({ length: 300 }, (_, i) => i),
    { toJSON: () => 'replaced' },
  );
  assertSame({ a: arrayWithToJSON });
  // A property's toJSON is called with its key, as JSON.stringify calls it.
  assertSame({ when: new Date(0), keyed: { toJSON: (key: string) => `key ${key}` } });
});

test('an object none of whose properties are written is {}', () => {
  assert.deepEqual(pieces({ a: undefined }), ['{}\n']);
  assert.deepEqual(pieces({}), ['{}\n']);
});
