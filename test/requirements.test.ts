import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
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

// Kilo's agent lies outside the repository (../shared/kilo); CI's copy has it, so its absence there
// must fail the mixed-cluster test rather than skip it.
test("the mixed cluster with Kilo's agent fails without Kilo's agent when KILO_TS_REQUIRE_ROOT_TESTS=1", () => {
  const file = join(import.meta.dirname, 'e2e/lab-kilo-mixed.test.ts');
  const run = (require: boolean) =>
    spawnSync(process.execPath, ['--test', '--import', 'tsx', file], {
      encoding: 'utf8',
      // Without the runner's NODE_TEST_CONTEXT, so that the child reports as a run of its own.
      env: {
        ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'NODE_TEST_CONTEXT')),
        KILO_TS_KILO_AGENT_GZ: join(tmpdir(), 'kilo-ts-no-such-kilo-agent.gz'),
        KILO_TS_REQUIRE_ROOT_TESTS: require ? '1' : '0',
        KILO_TS_SKIP_LOG: '',
      },
    });
  const required = run(true);
  assert.notEqual(required.status, 0, required.stdout);
  assert.match(required.stdout, /KILO_TS_REQUIRE_ROOT_TESTS=1 and this test needs Kilo's agent/);
  const optional = run(false);
  assert.equal(optional.status, 0, optional.stdout);
  assert.match(optional.stdout + optional.stderr, /mixed Kilo\/kilo-ts cluster was NOT tested/);
});
