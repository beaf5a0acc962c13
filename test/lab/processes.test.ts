import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'node:test';
import { nodeFlags } from '../../scripts/node-flags.mjs';
import { cliArgv } from '../../packages/lab/src/processes.js';
import { ensureBuilt, root } from '../cli/built.js';

// Built first, so cliArgv runs bin/ (as a lab started from the checkout does), not the sources.
ensureBuilt();

for (const cli of ['kg', 'kgctl'] as const) {
  test(`the lab runs ${cli} under the node flags of bin/${cli}'s #! line, as the image runs it`, () => {
    const bin = join(root, 'bin', cli);
    const argv = cliArgv(cli);
    assert.deepEqual(argv, [process.execPath, ...nodeFlags(bin), bin]);
  });
}

test("bin/kg's #! line names node flags (the heap's tuning, under which the build trains kg's code cache)", () => {
  assert.ok(nodeFlags(join(root, 'bin', 'kg')).length > 0);
});

test('kg started as the lab starts it takes its code cache (V8 rejects one made under other flags)', () => {
  const argv = cliArgv('kg');
  // Loaded before bin/kg imports the same module, to ask it at exit whether V8 took the cache.
  const kg = pathToFileURL(join(root, 'dist', 'cli', 'kg.js')).href;
  const probe = `data:text/javascript,import { codeCacheRejected } from '${kg}'; process.on('exit', () => process.stderr.write(JSON.stringify({ rejected: codeCacheRejected() })))`;
  const r = spawnSync(argv[0]!, [...argv.slice(1, -1), '--import', probe, argv.at(-1)!, '--version'], {
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^kg \d/);
  assert.deepEqual(JSON.parse(r.stderr), { rejected: false }, 'V8 took the code cache');
});
