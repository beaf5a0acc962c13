/**
 * How kgctl starts (src/cli/kgctl-start.ts, code-cache.ts): run through bin/kgctl's #! line it gets
 * the one-shot interrupt budget from there and does not load node:v8 to set it; run as `node
 * bin/kgctl` it sets the budget itself. Either way V8 takes the code cache the build trained.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { nodeFlags } from '../../scripts/node-flags.mjs';
import { oneShotBudgetFlag } from '../../src/cli/code-cache.js';
import { ensureBuilt, example, root } from './built.js';

const kgctl = join(root, 'bin', 'kgctl');
let dir: string;
let probe: string;

before(() => {
  ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'kts-kgctl-start-'));
  probe = join(dir, 'probe.cjs');
  // At exit, on a line of its own: whether node:v8 was loaded and whether V8 took kgctl's cache.
  writeFileSync(
    probe,
    [
      "const loader = () => Object.keys(require.cache).find((f) => f.endsWith('/dist/cli/kgctl.js'));",
      "process.on('exit', () => process.stderr.write('\\n' + JSON.stringify({ v8: process.moduleLoadList.includes('NativeModule v8'), rejected: require.cache[loader()].exports.codeCacheRejected() })));",
    ].join('\n'),
  );
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** kgctl plan of the example, started by `argv`, with the probe; what the probe saw. */
function started(argv: string[]): { v8: boolean; rejected: boolean } {
  const r = spawnSync(argv[0]!, [...argv.slice(1), 'plan', 'aws-euw-1', '--cluster', example, '-o', 'json'], {
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: `--require ${probe}` },
  });
  assert.equal(r.status, 0, r.stderr);
  assert.equal((JSON.parse(r.stdout) as { node: string }).node, 'aws-euw-1');
  return JSON.parse(r.stderr.split('\n').at(-1)!) as { v8: boolean; rejected: boolean };
}

test("bin/kgctl's #! line gives node the one-shot budget", () => {
  assert.deepEqual(nodeFlags(kgctl), [oneShotBudgetFlag]);
  assert.match(readFileSync(kgctl, 'utf8'), /^#!\/usr\/bin\/env -S node /);
});

test('kgctl run through its #! line loads no node:v8 and V8 takes its code cache', () => {
  assert.deepEqual(started([kgctl]), { v8: false, rejected: false });
});

test('kgctl run as `node bin/kgctl` sets the budget itself, and V8 takes the same cache', () => {
  assert.deepEqual(started([process.execPath, kgctl]), { v8: true, rejected: false });
});
