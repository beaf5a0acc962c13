import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Cidr } from '../../src/net/cidr.js';
import { PrefixIndex } from '../../src/net/prefix-index.js';

/** A small deterministic generator: the same prefixes on every run. */
function* prefixes(seed: number, count: number, family: 4 | 6): Generator<Cidr> {
  let x = seed;
  const next = () => (x = (x * 1103515245 + 12345) % 2 ** 31);
  for (let i = 0; i < count; i++) {
    if (family === 4) {
      const prefix = 8 + (next() % 25);
      yield Cidr.of(Cidr.parse(`10.${next() % 4}.${next() % 8}.${next() % 256}/32`).ip, prefix);
    } else {
      const prefix = 16 + (next() % 113);
      yield Cidr.of(
        Cidr.parse(`fd00:${next() % 4}:${(next() % 8).toString(16)}::${(next() % 65536).toString(16)}/128`).ip,
        prefix,
      );
    }
  }
}

test('the highest rank among overlapping prefixes is what a scan finds, IPv4 and IPv6 mixed', () => {
  const entries = [...prefixes(1, 400, 4), ...prefixes(2, 400, 6)].map((cidr, i) => ({ cidr, rank: i % 37 }));
  const index = new PrefixIndex(entries);
  for (const q of [...prefixes(3, 300, 4), ...prefixes(4, 300, 6)]) {
    const scan = Math.max(-1, ...entries.filter((e) => e.cidr.overlaps(q)).map((e) => e.rank));
    assert.equal(index.maxRankOverlapping(q), scan, q.networkText);
    assert.equal(index.overlapsAny(q), scan >= 0);
  }
});

test('ancestors, descendants, the exact prefix and neighbours', () => {
  const index = new PrefixIndex([
    { cidr: Cidr.parse('192.168.0.0/16'), rank: 1 },
    { cidr: Cidr.parse('192.168.7.0/24'), rank: 5 },
    { cidr: Cidr.parse('10.0.0.0/8'), rank: 3 },
  ]);
  assert.equal(index.maxRankOverlapping(Cidr.parse('192.168.7.9/32')), 5);
  assert.equal(index.maxRankOverlapping(Cidr.parse('192.168.8.0/24')), 1);
  assert.equal(index.maxRankOverlapping(Cidr.parse('192.0.0.0/8')), 5);
  assert.equal(index.maxRankOverlapping(Cidr.parse('10.0.0.0/8')), 3);
  assert.equal(index.maxRankOverlapping(Cidr.parse('11.0.0.0/8')), -1);
  assert.equal(index.maxRankOverlapping(Cidr.parse('fd00::/8')), -1);
  assert.equal(new PrefixIndex([]).overlapsAny(Cidr.parse('0.0.0.0/0')), false);
});
