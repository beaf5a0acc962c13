import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { hostExec } from '../../src/dataplane/exec.js';
import { startHelperEarly, takeEarlyHelper } from '../../src/dataplane/helper-process.js';

// kg apply starts its command helper before kg's bundle loads (src/cli/kg-start.ts), and the
// bundle's Spawner takes that process over. This file runs in a process of its own: its Spawner
// has no helper yet when the first test runs.
const slot = Symbol.for('kilo-ts.command-helper');
const early = () => (globalThis as { [slot]?: ChildProcess })[slot];

test('the helper started early is the one that runs the commands', async () => {
  startHelperEarly();
  const pid = early()?.pid;
  assert.ok(pid, 'a helper was started');
  // The command's parent is the helper that ran it.
  assert.deepEqual(await hostExec().run(['sh', '-c', 'echo $PPID']), { stdout: `${pid}\n`, stderr: '' });
  assert.equal(early(), undefined, 'taken over once');
});

test('a helper started early that died before it was taken over is not taken', async () => {
  startHelperEarly();
  const child = early()!;
  // Unref'd, it would not keep this test waiting for its exit.
  child.ref();
  child.kill('SIGKILL');
  await once(child, 'exit');
  assert.equal(takeEarlyHelper(), undefined);
  assert.equal(early(), undefined);
});

test('a helper started early keeps no one alive, and exits with the process that started it', async () => {
  const module = pathToFileURL(join(import.meta.dirname, '../../src/dataplane/helper-process.ts')).href;
  const r = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      `const m = await import(${JSON.stringify(module)}); m.startHelperEarly(); console.log(globalThis[Symbol.for('kilo-ts.command-helper')].pid);`,
    ],
    { encoding: 'utf8', timeout: 20_000 },
  );
  assert.equal(r.status, 0, `the process ended by itself: ${r.stderr}`);
  const pid = Number(r.stdout.trim());
  assert.ok(pid > 0, r.stdout);
  const alive = () => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  for (let i = 0; i < 100 && alive(); i++) await sleep(50);
  assert.equal(alive(), false, 'the helper exited with its parent');
});
