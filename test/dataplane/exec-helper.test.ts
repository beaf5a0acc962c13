import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ExecError, ExecInterrupted, hostExec } from '../../src/dataplane/exec.js';
import { spawnViaHelper } from '../../src/dataplane/spawner.js';

// Commands run through a small helper process (the agent's own fork is costly with a big heap):
// the results must be exactly those of a direct spawn.
test('through the helper: stdout, stdin, exit codes and a missing program, as a direct spawn gives them', async () => {
  const exec = hostExec();
  assert.deepEqual(await exec.run(['sh', '-c', 'cat; echo err >&2'], { input: 'in\n' }), {
    stdout: 'in\n',
    stderr: 'err\n',
  });
  const failed = await exec.run(['sh', '-c', 'echo out; echo bad >&2; exit 3']).then(
    () => assert.fail('exit 3 must reject'),
    (e: unknown) => e,
  );
  assert.ok(failed instanceof ExecError);
  assert.deepEqual([failed.code, failed.stdout, failed.stderr, failed.argv[0]], [3, 'out\n', 'bad\n', 'sh']);
  const missing = await exec.run(['kilo-ts-no-such-program']).then(
    () => assert.fail('a missing program must reject'),
    (e: unknown) => e,
  );
  assert.ok(missing instanceof ExecError);
  assert.equal(missing.code, null);
  assert.match(missing.stderr, /ENOENT/);
});

test('the helper runs commands side by side and a timeout kills only that command', async () => {
  const [slow, fast] = await Promise.all([
    spawnViaHelper('sleep', ['5'], '', 200),
    spawnViaHelper('echo', ['quick'], '', 5_000),
  ]);
  assert.equal(slow.code, null, 'killed by the timeout');
  assert.deepEqual(fast, { code: 0, stdout: 'quick\n', stderr: '' });
});

// The helper dying mid-command must not make the command run twice: an `iptables -I` batch (or
// anything not idempotent) would apply twice. The command kills its own parent, the helper.
test('a command whose helper dies while it runs is not run again: it fails, and the next command runs', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kilo-ts-exec-'));
  try {
    const log = join(dir, 'ran');
    const exec = hostExec();
    // The marker keeps a direct re-run (the bug) from killing its parent, the test itself.
    const script = `echo once >> "$0"; if [ ! -e "$0.killed" ]; then touch "$0.killed"; kill -9 $PPID; sleep 1; fi`;
    const failed = await exec.run(['sh', '-c', script, log]).then(
      () => assert.fail('a command whose helper died must reject'),
      (e: unknown) => e,
    );
    assert.ok(failed instanceof ExecInterrupted, String(failed));
    assert.match(failed.message, /not run again/);
    assert.equal(readFileSync(log, 'utf8'), 'once\n', 'the command ran exactly once');
    // A new helper takes over.
    assert.deepEqual(await exec.run(['echo', 'next']), { stdout: 'next\n', stderr: '' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
