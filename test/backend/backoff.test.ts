import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Backoff } from '../../src/backend/kubernetes/backoff.js';

describe('Backoff', () => {
  const options = { initialMs: 500, maxMs: 30_000, factor: 2, jitter: 0.5 };

  test('without jitter drawn, delays double from the first to the cap', () => {
    const b = new Backoff(options, () => 0);
    assert.deepEqual(
      Array.from({ length: 9 }, () => b.next()),
      [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000],
    );
    assert.equal(b.attempts, 9);
  });

  test('jitter shortens a delay by at most its fraction', () => {
    const b = new Backoff(options, () => 1);
    assert.deepEqual([b.next(), b.next()], [250, 500]);
  });

  test('reset starts again from the first delay', () => {
    const b = new Backoff(options, () => 0);
    b.next();
    b.next();
    b.reset();
    assert.equal(b.next(), 500);
  });

  test('many failures never overflow past the cap', () => {
    const b = new Backoff(options, () => 0);
    for (let i = 0; i < 2_000; i++) b.next();
    assert.equal(b.next(), 30_000);
  });
});
