import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'node:test';
import { nodeLaunch } from '../../scripts/node-flags.mjs';
import { cliArgv } from '../../packages/lab/src/processes.js';
import { ensureBuilt, root } from '../cli/built.js';

// Built first, so cliArgv runs bin/ (as a lab started from the checkout does), not the sources.
ensureBuilt();

for (const cli of ['kg', 'kgctl'] as const) {
  test(`the lab runs ${cli} as bin/${cli}'s #! line does, as the image runs it`, () => {
    const bin = join(root, 'bin', cli);
    const argv = cliArgv(cli);
    const { envPath, env, flags } = nodeLaunch(bin);
    const assignments = Object.entries(env).map(([name, value]) => `${name}=${value}`);
    const node = [process.execPath, ...flags, bin];
    assert.deepEqual(argv, assignments.length > 0 ? [envPath, ...assignments, ...node] : node);
  });
}

test("bin/kg's #! line names node flags (the heap's tuning, under which the build trains kg's code cache) and glibc's malloc settings", () => {
  const { env, flags } = nodeLaunch(join(root, 'bin', 'kg'));
  assert.ok(
    flags.some((f) => f.startsWith('--heap-growing-percent=')),
    flags.join(' '),
  );
  assert.equal(env['MALLOC_ARENA_MAX'], '2');
});

test("kg started as the lab starts it has the #! line's environment and flags, and takes its code cache (V8 rejects one made under other flags)", () => {
  const argv = cliArgv('kg');
  const { env, flags } = nodeLaunch(join(root, 'bin', 'kg'));
  // Loaded before bin/kg imports the same module, to ask it at exit whether V8 took the cache, and
  // what the kernel holds as the process's environment and command line.
  const kg = pathToFileURL(join(root, 'dist', 'cli', 'kg.js')).href;
  const probe = `data:text/javascript,import { codeCacheRejected } from '${kg}'; import { readFileSync } from 'node:fs'; const proc = (f) => readFileSync('/proc/self/' + f, 'utf8').split('\\0').filter(Boolean); process.on('exit', () => process.stderr.write(JSON.stringify({ rejected: codeCacheRejected(), environ: proc('environ'), cmdline: proc('cmdline') })))`;
  // None of it inherited from here.
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !(name in env)));
  const r = spawnSync(argv[0]!, [...argv.slice(1, -1), '--import', probe, argv.at(-1)!, '--version'], {
    encoding: 'utf8',
    env: inherited,
  });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^kg \d/);
  const got = JSON.parse(r.stderr) as { rejected: boolean; environ: string[]; cmdline: string[] };
  assert.equal(got.rejected, false, 'V8 took the code cache');
  for (const [name, value] of Object.entries(env)) assert.ok(got.environ.includes(`${name}=${value}`), name);
  assert.ok(got.environ.includes('MALLOC_ARENA_MAX=2'), 'glibc malloc settings in /proc/PID/environ');
  for (const flag of flags) assert.ok(got.cmdline.includes(flag), flag);
  assert.ok(
    got.cmdline.some((a) => a.startsWith('--heap-growing-percent=')),
    got.cmdline.join(' '),
  );
});
