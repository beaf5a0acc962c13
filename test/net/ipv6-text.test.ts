/**
 * IP's own RFC 5952 text of IPv6 bytes (no ipaddr arrays per address) writes exactly what ipaddr
 * writes, on edge cases and on many random addresses rich in zero groups.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import ipaddr from 'ipaddr.js';
import { IP } from '../../src/net/cidr.js';
import { random as seeded } from '../helpers/random.js';

test('IPv6 text is ipaddr’s, byte for byte', () => {
  const random = seeded(32);
  const cases: number[][] = [
    new Array<number>(16).fill(0),
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 1, 2, 3, 4],
    [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
    [0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    [0xfd, 0x4b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x13, 0x88],
    [1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1],
  ];
  for (let k = 0; k < 20_000; k++)
    cases.push(Array.from({ length: 16 }, () => (random() < 0.6 ? 0 : Math.floor(random() * 256))));
  for (const b of cases) {
    const want = ipaddr.fromByteArray(b).toString();
    assert.equal(IP.fromBytes(Uint8Array.from(b)).text, want, b.join(','));
    assert.equal(IP.parse(want).text, want);
  }
});

test('IPv6 text is read as ipaddr reads it: every spelling of an address, and what it refuses', () => {
  const random = seeded(6);
  const hex = (v: number, pad: boolean, upper: boolean) => {
    const t = v.toString(16).padStart(pad ? 4 : 1, '0');
    return upper ? t.toUpperCase() : t;
  };
  const texts: string[] = [
    '::',
    '::1',
    '1::',
    'fd4b::',
    '1:2:3:4:5:6:7:8',
    '::ffff:1.2.3.4',
    'fe80::1%eth0',
    ':::',
    '1:::2',
  ];
  texts.push(
    '1:2:3:4:5:6:7',
    '1:2:3:4:5:6:7:8:9',
    '1::2::3',
    ':1::',
    '1::2:',
    '12345::',
    'g::1',
    '::1:2:3:4:5:6:7',
    '1:2:3:4:5:6:7::',
  );
  for (let k = 0; k < 20_000; k++) {
    const groups = Array.from({ length: 8 }, () => (random() < 0.5 ? 0 : Math.floor(random() * 65536)));
    const pad = random() < 0.3;
    const upper = random() < 0.2;
    const parts = groups.map((g) => hex(g, pad, upper));
    // Compress a random run (maybe empty), as a writer may.
    const from = Math.floor(random() * 8);
    const to = from + Math.floor(random() * (9 - from));
    texts.push(
      to - from >= 1 && random() < 0.7
        ? `${parts.slice(0, from).join(':')}::${parts.slice(to).join(':')}`
        : parts.join(':'),
    );
  }
  for (const text of texts) {
    const valid = ipaddr.IPv6.isValid(text) && !text.includes('%');
    const got = IP.tryParse(text);
    assert.equal(got !== null, valid, text);
    if (got) assert.equal(got.text, ipaddr.IPv6.parse(text).toString(), text);
  }
});
