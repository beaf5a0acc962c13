import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { hostExec } from '../../src/dataplane/exec.js';
import { existsSync } from 'node:fs';
import { startHelperEarly, takeEarlyHelper, type Helper } from '../../src/dataplane/helper-process.js';

// kg apply starts its command helper before kg's bundle loads (src/cli/kg-start.ts), and the
// bundle's Spawner takes that process over. This file runs in a process of its own: its Spawner
// has no helper yet when the first test runs.
const slot = Symbol.for('kilo-ts.command-helper');
const early = () => (globalThis as { [slot]?: Helper })[slot];

test('the helper started early is the one that runs the commands', async () => {
  startHelperEarly();
  const pid = early()?.child.pid;
  assert.ok(pid, 'a helper was started');
  // The command's parent is the helper's job that waits for it, whose parent is the helper.
  assert.deepEqual(await hostExec().run(['sh', '-c', 'cut -d" " -f4 /proc/$PPID/stat']), {
    stdout: `${pid}\n`,
    stderr: '',
  });
  assert.equal(early(), undefined, 'taken over once');
});

test('a helper started early that died before it was taken over is not taken', async () => {
  startHelperEarly();
  const { child, dir } = early()!;
  // Unref'd, it would not keep this test waiting for its exit.
  child.ref();
  child.kill('SIGKILL');
  await once(child, 'exit');
  assert.equal(takeEarlyHelper(), undefined);
  assert.equal(early(), undefined);
  assert.equal(existsSync(dir), false, 'its directory removed (a killed shell runs no trap)');
});

test('a helper started early keeps no one alive, and exits with the process that started it, removing its directory', async () => {
  const module = pathToFileURL(join(import.meta.dirname, '../../src/dataplane/helper-process.ts')).href;
  const r = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      `const m = await import(${JSON.stringify(module)}); m.startHelperEarly(); const h = globalThis[Symbol.for('kilo-ts.command-helper')]; console.log(h.child.pid, h.dir);`,
    ],
    { encoding: 'utf8', timeout: 20_000 },
  );
  assert.equal(r.status, 0, `the process ended by itself: ${r.stderr}`);
  const [pid, dir] = [Number(r.stdout.split(' ')[0]), r.stdout.trim().split(' ')[1]!];
  assert.ok(pid > 0, r.stdout);
  assert.match(dir, /kilo-helper-/);
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
  for (let i = 0; i < 40 && existsSync(dir); i++) await sleep(50);
  assert.equal(existsSync(dir), false, `${dir} removed`);
});
