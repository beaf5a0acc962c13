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
