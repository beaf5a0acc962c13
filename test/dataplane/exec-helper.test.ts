import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ExecError, ExecInterrupted, hostExec } from '../../src/dataplane/exec.js';
import { spawnViaHelper } from '../../src/dataplane/spawner.js';

// Commands run through a helper shell (the agent's own fork is costly with a big heap): the
// results must be exactly those of a direct spawn.
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
// anything not idempotent) would apply twice. The command kills the helper: its parent's parent (its
// parent is the helper's job that waits for it).
test('a command whose helper dies while it runs is not run again: it fails, and the next command runs', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kilo-ts-exec-'));
  try {
    const log = join(dir, 'ran');
    const exec = hostExec();
    // The marker keeps a direct re-run (the bug) from killing its parent, the test itself.
    const script = `echo once >> "$0"; if [ ! -e "$0.killed" ]; then touch "$0.killed"; kill -9 $(cut -d" " -f4 /proc/$PPID/stat); sleep 1; fi`;
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

test('through the helper: arguments reach the program verbatim, and a name the shell also knows runs the program', async () => {
  const exec = hostExec();
  const words = ["it's", 'a b', '$HOME', '`id`', 'x\ny', '"', '\\', '*', ''];
  assert.deepEqual(await exec.run(['printf', '%s|', ...words]), { stdout: `${words.join('|')}|`, stderr: '' });
  // dash's own echo would turn \t into a tab; the program (coreutils) prints it as given.
  assert.deepEqual(await exec.run(['echo', 'a\\tb']), { stdout: 'a\\tb\n', stderr: '' });
});

test('through the helper: exit 255 is an exit code, a signal is none', async () => {
  const exec = hostExec();
  const codeOf = (argv: string[]) =>
    exec.run(argv).then(
      () => 0,
      (e: unknown) => (e as ExecError).code,
    );
  assert.equal(await codeOf(['sh', '-c', 'exit 255']), 255);
  assert.equal(await codeOf(['sh', '-c', 'kill -9 $$']), null);
});

test('through the helper: input is in a file only its owner reads, and gone once the command is', async () => {
  const exec = hostExec();
  const { stdout } = await exec.run(['sh', '-c', 'f=$(readlink /proc/self/fd/0); stat -c %a "$f"; echo "$f"'], {
    input: 'secret\n',
  });
  const [mode, file] = stdout.trim().split('\n');
  assert.equal(mode, '600');
  assert.ok(file && !existsSync(file), `${file} removed`);
});

test('the helper leaves no zombie: every finished command is reaped', async () => {
  const exec = hostExec();
  // The helper is the parent of the job that runs a command, so the command's grandparent.
  const helper = (await exec.run(['sh', '-c', 'cut -d" " -f4 /proc/$PPID/stat'])).stdout.trim();
  await Promise.all(Array.from({ length: 40 }, (_, i) => exec.run(['true', String(i)])));
  await exec.run(['true']);
  // A job's reap is queued behind its answer, so the last one may be a zombie for an instant (seen
  // once in a full run); a finished command that is never reaped stays one.
  let zombies = zombiesOf(helper);
  for (let i = 0; i < 40 && zombies.length > 0; i++) {
    await new Promise((r) => setTimeout(r, 50));
    zombies = zombiesOf(helper);
  }
  assert.equal(zombies.length, 0, `zombies of the helper ${helper}`);
});

/** The PIDs of `parent`'s children that have exited and not been waited for. */
function zombiesOf(parent: string): string[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        const [state, ppid] = readFileSync(`/proc/${d}/stat`, 'utf8')
          .replace(/^.*\) /, '')
          .split(' ');
        return ppid === parent && state === 'Z';
      } catch {
        return false;
      }
    });
}
