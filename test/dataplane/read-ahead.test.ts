import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ExecError, readingAhead, type Exec } from '../../src/dataplane/exec.js';

/** An Exec over a counter: `read` prints how many writes ran before it; `fail` exits 1. */
function counting(): Exec & { runs: string[] } {
  let writes = 0;
  const runs: string[] = [];
  return {
    runs,
    wireGuardRunDir: '/nonexistent',
    run: (argv) => {
      runs.push(argv.join(' '));
      if (argv[0] === 'write') writes++;
      if (argv[0] === 'fail') return Promise.reject(new ExecError(argv, 1, '', 'no'));
      return Promise.resolve({ stdout: `${argv.join(' ')} after ${writes}`, stderr: '' });
    },
    start: () => assert.fail('nothing is started'),
  };
}

test('a read taken ahead serves the next run of the same command, once, failure included', async () => {
  const inner = counting();
  const exec = readingAhead(inner);
  exec.readAhead!(['read', 'a']);
  exec.readAhead!(['fail']);
  assert.deepEqual(inner.runs, ['read a', 'fail'], 'started at once');
  // A read-only command in between leaves it alone.
  await exec.run(['version'], { readOnly: true });
  assert.equal((await exec.run(['read', 'a'])).stdout, 'read a after 0');
  await assert.rejects(exec.run(['fail']), ExecError);
  assert.equal((await exec.run(['read', 'a'])).stdout, 'read a after 0');
  assert.deepEqual(inner.runs, ['read a', 'fail', 'version', 'read a']);
});

test('any other command (it may write) drops what was read ahead: the reads after it run anew', async () => {
  const inner = counting();
  const exec = readingAhead(inner);
  exec.readAhead!(['read', 'a']);
  exec.readAhead!(['read', 'b']);
  await exec.run(['write']);
  assert.equal((await exec.run(['read', 'a'])).stdout, 'read a after 1');
  exec.readAhead!(['read', 'b']);
  // So does a command with input (a batch).
  await exec.run(['write'], { input: 'x' });
  assert.equal((await exec.run(['read', 'b'])).stdout, 'read b after 2');
  // And drop(): a write it does not see (another process's) comes after.
  exec.readAhead!(['read', 'a']);
  exec.drop();
  await inner.run(['write']);
  assert.equal((await exec.run(['read', 'a'])).stdout, 'read a after 3');
});
