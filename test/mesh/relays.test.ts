import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { relayedPairs } from '../../src/mesh/relays.js';
import { Annotation } from '../../src/model/annotations.js';
import { node, planFor, topologyFor, type NodeSpec } from '../helpers/cluster.js';

const kiloTs = { [Annotation.meshFlags]: '{"port":51820}' };

/** n nodes in each of the given locations, every one run by a kilo-ts agent (it announces mesh flags). */
function mesh(locations: Record<string, number>, extra: Record<string, Record<string, string>> = {}) {
  const out = [];
  let i = 0;
  for (const [loc, n] of Object.entries(locations))
    for (let j = 0; j < n; j++) {
      i++;
      const name = `${loc}-${j}`;
      const spec: NodeSpec = {
        location: loc,
        internalIP: `10.1.${i}.1/24`,
        endpoint: `198.51.100.${i}:51820`,
        podCIDR: `10.2.${i}.0/24`,
        annotations: { ...kiloTs, ...(extra[name] ?? {}) },
      };
      out.push(node(name, spec));
    }
  return out;
}

const cross = { granularity: 'cross' as const };
const unreachable = (names: string) => ({ [Annotation.unreachable]: names });

describe('relay choice', () => {
  test('no unreachable peers: no pairs', () => {
    assert.deepEqual(relayedPairs(topologyFor(mesh({ eu: 2, us: 2, ap: 1 }), 'eu-0', cross)), []);
  });

  test('a pair is relayed when one end reports the other, through a node of a third location', () => {
    const objects = mesh({ eu: 2, us: 2, ap: 1 }, { 'eu-0': unreachable('us-0') });
    for (const viewer of ['eu-0', 'us-0', 'ap-0', 'eu-1'])
      assert.deepEqual(relayedPairs(topologyFor(objects, viewer, cross)), [{ a: 'eu-0', b: 'us-0', via: 'ap-0' }]);
    // Only the ends and the relay take part.
    assert.deepEqual(relayedPairs(topologyFor(objects, 'eu-1', cross), 'eu-1'), []);
    assert.deepEqual(relayedPairs(topologyFor(objects, 'ap-0', cross), 'ap-0'), [
      { a: 'eu-0', b: 'us-0', via: 'ap-0' },
    ]);
  });

  test('operator-marked relays first, --relay=false and Kilo nodes never, nodes cut from an end never', () => {
    const base = { 'eu-0': unreachable('us-0') };
    const marked = mesh({ eu: 1, us: 1, ap: 3 }, { ...base, 'ap-2': { [Annotation.relay]: 'true' } });
    assert.equal(relayedPairs(topologyFor(marked, 'eu-0', cross))[0]!.via, 'ap-2');
    const refusing = mesh(
      { eu: 1, us: 1, ap: 2 },
      {
        ...base,
        'ap-0': { [Annotation.meshFlags]: '{"port":51820,"relay":false}', [Annotation.relay]: 'true' },
        'ap-1': { [Annotation.relay]: 'false' },
      },
    );
    assert.equal(relayedPairs(topologyFor(refusing, 'eu-0', cross))[0]!.via, null);
    const kilo = mesh({ eu: 1, us: 1, ap: 1 }, base).map((o) => {
      const a = { ...o.metadata!.annotations! };
      if (o.metadata!.name === 'ap-0') delete a[Annotation.meshFlags];
      return { ...o, metadata: { ...o.metadata!, annotations: a } };
    });
    assert.equal(relayedPairs(topologyFor(kilo, 'eu-0', cross))[0]!.via, null);
    const cutOff = mesh({ eu: 1, us: 1, ap: 2 }, { ...base, 'ap-0': unreachable('us-0'), 'ap-1': unreachable('eu-0') });
    const pairs = relayedPairs(topologyFor(cutOff, 'eu-0', cross));
    assert.deepEqual(
      pairs.find((p) => p.a === 'eu-0' && p.b === 'us-0'),
      { a: 'eu-0', b: 'us-0', via: null },
    );
  });

  test("Kilo's agent takes no part: a pair with a Kilo node is never relayed, a Kilo node is no spoke", () => {
    const kiloNode = (objects: ReturnType<typeof mesh>, name: string) =>
      objects.map((o) => {
        if (o.metadata!.name !== name) return o;
        const a = { ...o.metadata!.annotations! };
        delete a[Annotation.meshFlags];
        return { ...o, metadata: { ...o.metadata!, annotations: a } };
      });
    const reported = kiloNode(mesh({ eu: 1, us: 1, ap: 1 }, { 'eu-0': unreachable('us-0') }), 'us-0');
    assert.deepEqual(relayedPairs(topologyFor(reported, 'eu-0', cross)), []);
    const spoke = kiloNode(mesh({ eu: 1, us: 1, ap: 1 }, { 'eu-0': { [Annotation.spoke]: 'true' } }), 'eu-0');
    assert.deepEqual(relayedPairs(topologyFor(spoke, 'us-0', cross)), []);
  });

  test('location leaders before other nodes', () => {
    // ap-0 leads ap by Kilo's rule (the leader annotation).
    const objects = mesh({ eu: 1, us: 1, ap: 4 }, { 'eu-0': unreachable('us-0') }).map((o) =>
      o.metadata!.name === 'ap-3'
        ? {
            ...o,
            metadata: { ...o.metadata!, annotations: { ...o.metadata!.annotations!, [Annotation.leader]: 'true' } },
          }
        : o,
    );
    assert.equal(relayedPairs(topologyFor(objects, 'eu-0', cross))[0]!.via, 'ap-3');
  });

  test('property: every viewer agrees; a relay is a peer of both ends that reaches both, never refused', () => {
    const names = ['a-0', 'a-1', 'b-0', 'b-1', 'c-0', 'c-1', 'd-0'];
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom(...names), fc.constantFrom(...names)), { maxLength: 8 }),
        fc.subarray(names),
        fc.subarray(names),
        (cuts, refusing, marked) => {
          const lists = new Map<string, Set<string>>();
          for (const [x, y] of cuts) if (x[0] !== y[0]) lists.set(x, (lists.get(x) ?? new Set()).add(y));
          const extra: Record<string, Record<string, string>> = {};
          for (const n of names) {
            extra[n] = {};
            if (lists.has(n)) extra[n][Annotation.unreachable] = [...lists.get(n)!].join(',');
            if (marked.includes(n)) extra[n][Annotation.relay] = 'true';
            if (refusing.includes(n)) extra[n][Annotation.meshFlags] = '{"relay":false}';
          }
          const objects = mesh({ a: 2, b: 2, c: 2, d: 1 }, extra);
          const all = relayedPairs(topologyFor(objects, 'a-0', cross));
          const cut = (x: string, y: string) => lists.get(x)?.has(y) || lists.get(y)?.has(x);
          for (const viewer of names) {
            const t = topologyFor(objects, viewer, cross);
            assert.deepEqual(relayedPairs(t), all, viewer);
            assert.deepEqual(
              relayedPairs(t, viewer),
              all.filter((p) => p.a === viewer || p.b === viewer || p.via === viewer),
            );
          }
          for (const p of all) {
            assert.ok(cut(p.a, p.b));
            if (p.via === null) continue;
            assert.ok(p.via[0] !== p.a[0] && p.via[0] !== p.b[0], 'a WireGuard peer of both ends');
            assert.ok(!cut(p.via, p.a) && !cut(p.via, p.b), 'reached directly by both');
            assert.ok(!refusing.includes(p.via), 'never a node that refuses');
            const anyMarked = names.some(
              (r) =>
                marked.includes(r) &&
                !refusing.includes(r) &&
                r[0] !== p.a[0] &&
                r[0] !== p.b[0] &&
                !cut(r, p.a) &&
                !cut(r, p.b),
            );
            if (anyMarked) assert.ok(marked.includes(p.via), 'an operator-marked relay when one qualifies');
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  test('property: pairs spread over the candidates', () => {
    const extra: Record<string, Record<string, string>> = {};
    const ends = Array.from({ length: 12 }, (_, i) => `x${i}-0`);
    const locations: Record<string, number> = { r: 4 };
    for (const e of ends) locations[e.slice(0, -2)] = 1;
    // Each x node cannot reach the next: 12 pairs over four operator-marked candidates.
    ends.forEach((e, i) => (extra[e] = unreachable(ends[(i + 1) % ends.length]!)));
    for (const r of ['r-0', 'r-1', 'r-2', 'r-3']) extra[r] = { [Annotation.relay]: 'true' };
    const pairs = relayedPairs(topologyFor(mesh(locations, extra), 'r-0', cross));
    assert.equal(pairs.length, 12);
    const used = new Set(pairs.map((p) => p.via));
    assert.ok(used.size >= 2, `12 pairs over ${used.size} relay(s)`);
  });
});

describe('hub and spoke', () => {
  const spoke = { [Annotation.spoke]: 'true' };
  test('a spoke peers with its hub alone: every other WireGuard pair of it goes through the hub', () => {
    const objects = mesh({ eu: 1, us: 2, ap: 2 }, { 'eu-0': spoke, 'ap-1': { [Annotation.relay]: 'true' } });
    assert.deepEqual(relayedPairs(topologyFor(objects, 'us-0', cross)), [
      { a: 'eu-0', b: 'us-0', via: 'ap-1', spoke: true },
      { a: 'eu-0', b: 'us-1', via: 'ap-1', spoke: true },
    ]);
    // ap-0 shares the hub's location: the hub reaches it in the clear, so it keeps a direct path.
    const plan = planFor(objects, 'eu-0', cross);
    assert.deepEqual(
      plan.peers.map((p) => p.names.join()),
      ['ap-0', 'ap-1'],
    );
    const hub = plan.peers.find((p) => p.names.includes('ap-1'))!;
    assert.ok(
      hub.allowedIPs.includes('10.2.2.0/24') && hub.allowedIPs.includes('10.2.3.0/24'),
      'us-0 and us-1 through the hub',
    );
    const other = planFor(objects, 'us-1', cross);
    assert.ok(!other.peers.some((p) => p.names.includes('eu-0')), 'no direct entry at the other end either');
    assert.ok(other.peers.find((p) => p.names.includes('ap-1'))!.allowedIPs.includes('10.2.1.0/24'));
  });

  test('a spoke is never a relay, and two spokes of different hubs are left direct', () => {
    const objects = mesh(
      { eu: 1, us: 1, ap: 1, sa: 1 },
      { 'eu-0': { ...spoke, [Annotation.relay]: 'true' }, 'us-0': unreachable('sa-0') },
    );
    assert.equal(
      relayedPairs(topologyFor(objects, 'us-0', cross)).find((p) => p.a === 'sa-0' || p.b === 'sa-0')?.via,
      'ap-0',
    );
    const two = mesh(
      { eu: 1, us: 1, ap: 1, sa: 1 },
      { 'eu-0': spoke, 'us-0': spoke, 'ap-0': { [Annotation.relay]: 'true' } },
    );
    const pair = relayedPairs(topologyFor(two, 'eu-0', cross)).find((p) => p.a === 'eu-0' && p.b === 'us-0');
    assert.deepEqual(pair, { a: 'eu-0', b: 'us-0', via: 'ap-0', spoke: true }, 'one hub for both: through it');
  });
});

describe('relay choice at scale', () => {
  // 40 nodes in five locations, each listing up to three unreachable nodes (a fixed sequence), two
  // marked relays and one refusing: 94 pairs. The digests are of the choice as first written (one
  // rendezvous hash per candidate and pair, commit 402004a): the faster search must choose the same.
  const names = Array.from({ length: 40 }, (_, i) => `${'abcde'[i % 5]}-${Math.floor(i / 5)}`);
  let seed = 7;
  const next = (n: number) => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % n;
  const objects = names.map((name, i) => {
    const listed = new Set<string>();
    for (let k = 0; k < 3; k++) {
      const j = next(40);
      if (j % 5 !== i % 5) listed.add(names[j]!);
    }
    const annotations: Record<string, string> = { ...kiloTs };
    if (listed.size > 0) annotations[Annotation.unreachable] = [...listed].sort().join(',');
    if (i === 7 || i === 13) annotations[Annotation.relay] = 'true';
    if (i === 21) annotations[Annotation.relay] = 'false';
    return node(name, {
      location: name[0],
      internalIP: `10.1.${i + 1}.1/24`,
      endpoint: `198.51.100.${i + 1}:51820`,
      podCIDR: `10.2.${i + 1}.0/24`,
      annotations,
    });
  });
  const digest = (x: unknown) => createHash('sha256').update(JSON.stringify(x)).digest('hex').slice(0, 16);

  for (const [granularity, expected] of [
    ['cross', 'c9d9951d496fc2c0'],
    ['full', '566a5a9f75265839'],
  ] as const)
    test(`${granularity}: the same relays as the first implementation, from every viewer`, () => {
      const all = relayedPairs(topologyFor(objects, 'a-0', { granularity }));
      assert.equal(all.length, 94);
      assert.equal(digest(all), expected);
      for (const viewer of names)
        assert.deepEqual(
          relayedPairs(topologyFor(objects, viewer, { granularity }), viewer),
          all.filter((p) => p.a === viewer || p.b === viewer || p.via === viewer),
          viewer,
        );
    });
});
