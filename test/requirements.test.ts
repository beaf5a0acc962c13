import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { skipUnless } from './helpers/requirements.js';

// Tests that need root skip where it is missing; CI must not be green by skipping them.
test('a missing requirement skips and is logged, or fails when KILO_TS_REQUIRE_ROOT_TESTS=1', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kilo-ts-req-'));
  const saved = { require: process.env.KILO_TS_REQUIRE_ROOT_TESTS, log: process.env.KILO_TS_SKIP_LOG };
  t.after(() => {
    for (const [k, v] of [
      ['KILO_TS_REQUIRE_ROOT_TESTS', saved.require],
      ['KILO_TS_SKIP_LOG', saved.log],
    ] as const)
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    rmSync(dir, { recursive: true, force: true });
  });
  process.env.KILO_TS_SKIP_LOG = join(dir, 'log');
  delete process.env.KILO_TS_REQUIRE_ROOT_TESTS;
  assert.equal(skipUnless(true, 'needs x'), false);
  assert.equal(skipUnless(false, 'needs x'), 'needs x');
  assert.match(readFileSync(join(dir, 'log'), 'utf8'), /^\S+\tneeds x\n$/);
  process.env.KILO_TS_REQUIRE_ROOT_TESTS = '1';
  assert.equal(skipUnless(true, 'needs x'), false);
  assert.throws(() => skipUnless(false, 'needs x'), /KILO_TS_REQUIRE_ROOT_TESTS=1 and this test needs x/);
});
