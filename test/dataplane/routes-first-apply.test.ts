/**
 * The shortcuts a first kg apply takes through 10,000 routes give exactly what the general code
 * gives: destinations checked without a Cidr, the diff against nothing, lines rendered in runs.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { diffFromNothing, diffState, type RouteOp } from '../../src/dataplane/routes/diff.js';
import { renderOp, renderOps } from '../../src/dataplane/routes/iproute.js';
import { canonicalPrefix4, desiredState, type KernelRoute } from '../../src/dataplane/routes/state.js';
import { kiloTable, type PlanRoute, type PlanRule } from '../../src/mesh/types.js';
import { Cidr } from '../../src/net/cidr.js';

test('canonicalPrefix4 takes a text only when Cidr parses it to itself, and every IPv4 networkText', () => {
  const octet = fc.oneof(
    fc.integer({ min: 0, max: 300 }).map(String),
    fc.integer({ min: 0, max: 99 }).map((n) => `0${n}`),
    fc.constantFrom('', '-1', ' 1', '1e2'),
  );
  const length = fc.oneof(fc.integer({ min: 0, max: 40 }).map(String), fc.constantFrom('', '08', '032', 'x', '1 '));
  const texts = fc
    .tuple(fc.array(octet, { minLength: 3, maxLength: 5 }), length)
    .map(([o, l]) => `${o.join('.')}/${l}`);
  const noise = fc.string({ unit: fc.constantFrom(...'0123456789./: '), maxLength: 19 });
  fc.assert(
    fc.property(fc.oneof(texts, noise), (text) => {
      const fast = canonicalPrefix4(text);
      const cidr = Cidr.tryParsePrefix(text);
      if (fast) assert.deepEqual([cidr?.family, cidr?.networkText], [4, text], text);
      else assert.ok(cidr === null || cidr.family !== 4 || cidr.networkText !== text || !text.includes('/'), text);
    }),
    { numRuns: 10000 },
  );
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 2 ** 32 - 1 }), fc.integer({ min: 0, max: 32 }), (v, len) => {
      const ip = [24, 16, 8, 0].map((s) => (v >>> s) & 255).join('.');
      const text = Cidr.parse(`${ip}/${len}`).networkText;
      assert.deepEqual(canonicalPrefix4(text), { family: 4, networkText: text });
    }),
    { numRuns: 5000 },
  );
});

const route = (dst: string, gw: string | null, dev: PlanRoute['dev'], extra: Partial<PlanRoute> = {}): PlanRoute => ({
  dst,
  gw,
  dev,
  src: null,
  table: 'main',
  onlink: gw !== null,
  ...extra,
});
const rule = (src: string | null, dst: string | null): PlanRule => ({ src, dst, iif: null, table: kiloTable });
const devices = { kilo: 'kilo0', private: 'priv0', tunnel: null };

test('the diff against nothing is diffState against nothing; renderOps is renderOp of each', () => {
  const d = desiredState(
    [
      route('10.42.2.0/24', '10.4.0.2', 'kilo', { src: '192.168.1.1' }),
      route('10.42.3.0/24', '10.4.0.2', 'kilo', { src: '192.168.1.1' }),
      route('10.42.4.0/24', '10.4.0.2', 'kilo'),
      route('10.42.5.1/24', '10.4.0.3', 'kilo'), // not in network form: Cidr makes it 10.42.5.0/24
      route('10.5.0.1/32', null, 'kilo'),
      route('10.5.0.2/32', null, 'kilo', { table: kiloTable }),
      route('fd42:2::/64', 'fd00::2', 'private'),
      route('fd42:3::/64', 'fd00::2', 'private'),
      route('10.42.6.0/24', 'fd00::2', 'private'),
      route('10.42.7.0/24', '192.168.1.7', 'tunnel'), // a problem: no tunnel
    ],
    // Two that clash at one priority (the precise diff gives up), and IPv6.
    [rule('10.42.1.0/24', '192.168.1.3/32'), rule(null, '192.168.1.3/32'), rule('fd42:1::/64', null)],
    devices,
  );
  assert.equal(d.routes.length, 9);
  assert.equal(d.routes[3]!.dst, '10.42.5.0/24');
  const ops = diffFromNothing(d);
  assert.deepEqual(ops, diffState(d, { routes: [], rules: [] }, d.protectedKeys));
  const mixed: RouteOp[] = [
    ...ops,
    ...d.routes.slice(0, 3).map((r: KernelRoute): RouteOp => ({ kind: 'route', action: 'del', route: r })),
    { kind: 'route', action: 'replace', route: d.routes[2]! },
    { kind: 'route', action: 'replace', route: { ...d.routes[2]!, metric: 5 } },
  ];
  assert.deepEqual(renderOps(mixed), mixed.map(renderOp));
});
