/** Every command catches at its top (issue 12): one line, exit 1; a bug points to --log-level debug. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Command } from 'commander';
import { runProgram } from '../../src/cli/run.js';
import { UsageError } from '../../src/model/errors.js';

async function run(thrown: unknown, ...extra: string[]): Promise<{ err: string; code: number | undefined }> {
  const program = new Command('kgctl').option('--log-level <level>').addCommand(
    new Command('boom').action(() => {
      throw thrown;
    }),
  );
  let err = '';
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = (s: string) => ((err += s), true);
  const before = process.exitCode;
  try {
    await runProgram(program, ['boom', ...extra]);
    return { err, code: process.exitCode as number | undefined };
  } finally {
    process.stderr.write = write;
    process.exitCode = before;
  }
}

test('a user error is one line, exit 1', async () => {
  const r = await run(new UsageError('no cluster'));
  assert.equal(r.err, 'kgctl: no cluster\n');
  assert.equal(r.code, 1);
});

test('a bug is one line with a pointer to --log-level debug, never a page of library source', async () => {
  const r = await run(new TypeError(`x is not a function\n${'minified();'.repeat(3000)}`));
  assert.equal(r.err.split('\n').length, 2, r.err);
  assert.match(r.err, /^kgctl: internal error .*x is not a function.*run with --log-level debug for the trace\n$/);
  assert.ok(r.err.length < 500);
  assert.equal(r.code, 1);
});

test('--log-level debug prints the trace', async () => {
  const r = await run(new TypeError('x is not a function'), '--log-level', 'debug');
  assert.match(r.err, /internal error: TypeError: x is not a function\n\s+at /);
});
