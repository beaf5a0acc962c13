import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { aggregate, PrefixSet } from '../../src/net/aggregate.js';
import { Cidr } from '../../src/net/cidr.js';
import { random } from '../helpers/random.js';

const cidrs = (...texts: string[]) => texts.map((t) => Cidr.parse(t));
const texts = (cs: Cidr[]) => cs.map((c) => c.networkText);

/**
 * A universe of the property tests: 64 addresses, small enough to enumerate. 10.0.0.0/26, and
 * others at the edges of the address spaces: the top of IPv4, the halves around 2^31, IPv6.
 */
function universeOf(text: string) {
  const universe = Cidr.parse(text);
  // fd05::/109: 64 blocks of 2^13 addresses, so that lengths 109 to 115 cross IPv6's group boundary
  // at 112, where aggregate6.ts's bits go from one 16-bit unit to the next.
  const shift = text === 'fd05::/109' ? 13 : 0;
  const addresses = Array.from({ length: 64 }, (_, i) => universe.nth(i * 2 ** shift)!);
  const covered = (cs: Cidr[]) => addresses.filter((a) => cs.some((c) => c.contains(a))).map((a) => a.text);
  const width = (universe.family === 4 ? 32 : 128) - shift;
  const randomCase = (next: () => number): Cidr[] =>
    Array.from({ length: 1 + Math.floor(next() * 12) }, () => {
      const prefix = width - 6 + Math.floor(next() * 7);
      return Cidr.of(addresses[Math.floor(next() * 64)]!, prefix);
    });
  return { addresses, covered, randomCase };
}

const universes = [
  '10.0.0.0/26',
  '255.255.255.192/26',
  '127.255.255.192/26',
  '128.0.0.0/26',
  'fd05::/122',
  'fd05::/109',
];

/** The fewest aligned prefixes for a set of offsets: every maximal prefix wholly inside the set. */
function fewestPrefixes(set: Set<number>): number {
  let n = 0;
  for (let bits = 0; bits <= 6; bits++) {
    const size = 1 << bits;
    for (let start = 0; start < 64; start += size) {
      const inside = (s: number, len: number) => Array.from({ length: len }, (_, i) => s + i).every((a) => set.has(a));
      const parent = bits < 6 ? start - (start % (size * 2)) : -1;
      if (inside(start, size) && (parent < 0 || !inside(parent, size * 2))) n++;
    }
  }
  return n;
}

describe('aggregate', () => {
  test('sibling halves merge, repeatedly', () => {
    assert.deepEqual(texts(aggregate(cidrs('10.42.1.0/24', '10.42.0.0/24'))), ['10.42.0.0/23']);
    assert.deepEqual(
      texts(aggregate(cidrs('10.42.0.0/24', '10.42.1.0/24', '10.42.2.0/24', '10.42.3.0/24', '10.42.4.0/24'))),
      ['10.42.0.0/22', '10.42.4.0/24'],
    );
  });

  test('adjacent prefixes that are not siblings stay apart', () => {
    assert.deepEqual(texts(aggregate(cidrs('10.42.1.0/24', '10.42.2.0/24'))), ['10.42.1.0/24', '10.42.2.0/24']);
    assert.deepEqual(texts(aggregate(cidrs('10.0.0.1/32', '10.0.0.2/32'))), ['10.0.0.1/32', '10.0.0.2/32']);
  });

  test('contained prefixes and duplicates are dropped', () => {
    assert.deepEqual(texts(aggregate(cidrs('10.4.0.1/32', '10.4.0.0/16', '10.4.0.1/32', '10.4.200.0/24'))), [
      '10.4.0.0/16',
    ]);
  });

  test('a merged parent completes a half one level up', () => {
    // 10.0.0.0/25 waits on the stack while 10.0.0.128/26 and 10.0.0.192/26 merge into its sibling.
    assert.deepEqual(texts(aggregate(cidrs('10.0.0.192/26', '10.0.0.0/25', '10.0.0.128/26'))), ['10.0.0.0/24']);
  });

  test('host bits are ignored: an internal IP with its mask counts as its network', () => {
    assert.deepEqual(texts(aggregate(cidrs('10.0.0.5/24', '10.0.1.9/24'))), ['10.0.0.0/23']);
  });

  test('IPv6 halves merge with 128-bit arithmetic; /0 is the whole family', () => {
    assert.deepEqual(texts(aggregate(cidrs('fd05::1/128', 'fd05::/128', 'fd05::2/127'))), ['fd05::/126']);
    assert.deepEqual(texts(aggregate(cidrs('8000::/1', '::/1'))), ['::/0']);
    assert.deepEqual(texts(aggregate(cidrs('0.0.0.0/1', '128.0.0.0/1', '10.0.0.0/8'))), ['0.0.0.0/0']);
    assert.deepEqual(texts(aggregate(cidrs('fd42:0:0:1::/64', 'fd42::/64', 'fd42:0:0:ffff::/64'))), [
      'fd42::/63',
      'fd42:0:0:ffff::/64',
    ]);
  });

  test('both families: IPv4 first, each in address order', () => {
    assert.deepEqual(
      texts(aggregate(cidrs('fd05::2/128', '10.9.0.0/24', 'fd05::1/128', '10.1.0.0/16', '192.168.0.1/32'))),
      ['10.1.0.0/16', '10.9.0.0/24', '192.168.0.1/32', 'fd05::1/128', 'fd05::2/128'],
    );
    assert.deepEqual(aggregate([]), []);
  });

  test('an unmerged IPv6 input is returned as the same value', () => {
    const input = Cidr.parse('fd05::7/128');
    assert.equal(aggregate([input, Cidr.parse('fd09::/64')])[0], input);
  });

  for (const u of universes) {
    test(`properties over 2,000 random cases in ${u}: same addresses, no overlap, fewest prefixes, sorted, idempotent, order-free`, () => {
      const { addresses, covered, randomCase } = universeOf(u);
      const next = random(1107);
      for (let i = 0; i < 2000; i++) {
        const input = randomCase(next);
        const out = aggregate(input);
        const label = texts(input).join(' ');
        assert.deepEqual(covered(out), covered(input), `same addresses: ${label}`);
        for (const [j, a] of out.entries()) {
          for (const b of out.slice(j + 1))
            assert.ok(!a.overlaps(b), `${a.networkText} overlaps ${b.networkText}: ${label}`);
        }
        const set = new Set(covered(input).map((t) => addresses.findIndex((a) => a.text === t)));
        assert.equal(out.length, fewestPrefixes(set), `fewest prefixes: ${label} -> ${texts(out).join(' ')}`);
        const starts = out.map((c) => c.network.bytes[c.network.bytes.length - 1]!);
        assert.deepEqual(
          starts,
          [...starts].sort((a, b) => a - b),
          `address order: ${label}`,
        );
        assert.deepEqual(texts(aggregate(out)), texts(out), `idempotent: ${label}`);
        assert.deepEqual(texts(aggregate([...input].reverse())), texts(out), `order-free: ${label}`);
      }
    });
  }

  test('with a set to leave out: the same as leaving out first what the set covers, both families', () => {
    const next = random(2024);
    for (let i = 0; i < 2000; i++) {
      const u = universeOf(universes[i % universes.length]!);
      const v = universeOf(universes[(i + 1 + Math.floor(next() * 4)) % universes.length]!);
      const set = new PrefixSet([...u.randomCase(next), ...(next() < 0.3 ? v.randomCase(next) : [])]);
      const input = [...u.randomCase(next), ...u.randomCase(next), ...(next() < 0.5 ? v.randomCase(next) : [])];
      assert.deepEqual(
        texts(aggregate(input, set)),
        texts(aggregate(input.filter((c) => !set.covers(c)))),
        texts(input).join(' '),
      );
    }
  });
});

describe('PrefixSet', () => {
  test('plus: the set of the union, however the prefixes came in (IPv6 ones carry where they came from)', () => {
    const next = random(37);
    for (let i = 0; i < 1000; i++) {
      const u = universeOf(universes[i % universes.length]!);
      const v = universeOf(universes[(i + 1 + Math.floor(next() * 5)) % universes.length]!);
      const [a, b, c] = [u.randomCase(next), [...u.randomCase(next), ...v.randomCase(next)], u.randomCase(next)];
      const grown = new PrefixSet(a).plus(b).plus(c);
      const whole = new PrefixSet([...a, ...b, ...c]);
      for (const probe of [...u.randomCase(next), ...v.randomCase(next), ...a, ...b, ...c]) {
        assert.equal(
          grown.covers(probe),
          whole.covers(probe),
          `${probe.networkText} in ${texts([...a, ...b, ...c]).join(' ')}`,
        );
      }
      const input = [...u.randomCase(next), ...c];
      assert.deepEqual(texts(aggregate(input, grown)), texts(aggregate(input, whole)));
    }
    const set = new PrefixSet([]).plus(cidrs('fd05::8/128', 'fd05::/64'));
    assert.ok(set.covers(Cidr.parse('fd05::/64')));
    assert.deepEqual(texts(aggregate(cidrs('fd05::/64', 'fd06::/64'), set)), ['fd06::/64']);
  });

  test('covers a prefix inside one block, not one that sticks out or lies outside', () => {
    const set = new PrefixSet(cidrs('10.42.0.0/24', '10.42.1.0/24', '10.4.0.1/32', 'fd05::/64'));
    for (const inside of ['10.42.0.0/23', '10.42.1.128/25', '10.4.0.1/32', 'fd05::9/128']) {
      assert.ok(set.covers(Cidr.parse(inside)), inside);
    }
    for (const outside of [
      '10.42.0.0/22',
      '10.4.0.0/31',
      '10.4.0.2/32',
      '10.41.255.255/32',
      'fd06::/64',
      '10.42.0.0/0',
    ]) {
      assert.ok(!set.covers(Cidr.parse(outside)), outside);
    }
  });

  for (const u of universes) {
    test(`agrees with enumeration over random cases in ${u}`, () => {
      const { covered, randomCase } = universeOf(u);
      const next = random(451);
      for (let i = 0; i < 500; i++) {
        const members = randomCase(next);
        const set = new PrefixSet(members);
        const inSet = new Set(covered(members));
        for (const probe of randomCase(next)) {
          const expected = covered([probe]).every((a) => inSet.has(a));
          assert.equal(set.covers(probe), expected, `${probe.networkText} in ${texts(members).join(' ')}`);
        }
      }
    });
  }
});
