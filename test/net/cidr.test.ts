import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import { Cidr, IP } from '../../src/net/cidr.js';
import { AddressMemo } from '../../src/net/memo.js';

describe('IP.tryParse', () => {
  test('IPv4: exactly what ipaddr.js takes as four decimal parts, with the same bytes', () => {
    const octet = fc.oneof(
      fc.integer({ min: 0, max: 300 }).map(String),
      fc.integer({ min: 0, max: 99 }).map((n) => `0${n}`),
      fc.constantFrom('', '0x1', '-1', '1e2', ' 1', '٣'),
    );
    const quads = fc.array(octet, { minLength: 1, maxLength: 5 }).map((parts) => parts.join('.'));
    const noise = fc.string({ unit: fc.constantFrom(...'0123456789./x: '), maxLength: 17 });
    fc.assert(
      fc.property(fc.oneof(quads, noise), (text) => {
        const ip = IP.tryParse(text);
        if (text.includes(':')) return;
        if (!ipaddr.IPv4.isValidFourPartDecimal(text)) return assert.equal(ip, null, text);
        assert.equal(ip?.family, 4, text);
        assert.deepEqual([...ip.bytes], ipaddr.IPv4.parse(text).toByteArray(), text);
        assert.equal(ip.text, text);
      }),
      { numRuns: 5000 },
    );
  });

  test('rejects the inet_aton forms Kubernetes never means', () => {
    for (const text of ['1', '0x1.0.0.1', '010.0.0.1', '1.2.3', '1.2.3.4.5', '256.0.0.1', '1.2.3.4 ', ''])
      assert.equal(IP.tryParse(text), null, text);
    assert.equal(IP.tryParse('255.255.255.255')?.text, '255.255.255.255');
    assert.equal(IP.tryParse('fd00:0::1')?.text, 'fd00::1');
  });
});

describe('Cidr.tryParsePrefix', () => {
  test('a CIDR in network form, a bare address as its host prefix', () => {
    const cases: [string, string | null][] = [
      ['10.0.0.5/24', '10.0.0.0/24'],
      ['10.0.0.5', '10.0.0.5/32'],
      ['0.0.0.0/0', '0.0.0.0/0'],
      ['fd00:0::1', 'fd00::1/128'],
      ['fd00:0:0:1::5/64', 'fd00:0:0:1::/64'],
      ['10.0.0.0/33', null],
      ['10.0.0.0/', null],
      ['10.0.0.0/08', null],
      ['default', null],
      ['10.0.0', null],
    ];
    for (const [text, want] of cases) assert.equal(Cidr.tryParsePrefix(text)?.networkText ?? null, want, text);
  });
});

describe('AddressMemo', () => {
  test('answers as the parsers do, and the same value again while the texts are in use', () => {
    const memo = new AddressMemo();
    const dst = memo.prefix('10.42.3.7/24');
    assert.equal(dst?.networkText, '10.42.3.0/24');
    assert.equal(memo.address('fd00:0::1')?.text, 'fd00::1');
    assert.equal(memo.prefix('nonsense'), null);
    assert.equal(memo.address('10.0.0.0/8'), null);
    memo.nextPass();
    assert.equal(memo.prefix('10.42.3.7/24'), dst);
  });

  test('forgets once it holds more than twice what a pass asked for', () => {
    const memo = new AddressMemo();
    const texts = ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4', '10.0.0.5'];
    const first = texts.map((t) => memo.prefix(t));
    memo.nextPass();
    // A pass asking for the same texts keeps them all.
    assert.deepEqual(
      texts.map((t) => memo.prefix(t)),
      first,
    );
    memo.nextPass();
    assert.equal(memo.prefix(texts[0]!), first[0]);
    // That pass asked for one text while five are held: the next pass starts empty.
    memo.nextPass();
    const again = memo.prefix(texts[0]!);
    assert.notEqual(again, first[0]);
    assert.equal(again?.networkText, '10.0.0.1/32');
  });
});
