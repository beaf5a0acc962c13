/**
 * How kgctl starts (src/cli/kgctl-start.ts, code-cache.ts): bin/kgctl runs node without V8 flags
 * (one on the command line makes V8 reject Node's own code cache of its built-in modules), and V8
 * takes the code cache the build trained, under the one-shot budget kgctl sets at run time.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { nodeFlags } from '../../scripts/node-flags.mjs';
import { ensureBuilt, example, root } from './built.js';

const kgctl = join(root, 'bin', 'kgctl');
let dir: string;
let probe: string;

before(() => {
  ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'kts-kgctl-start-'));
  probe = join(dir, 'probe.cjs');
  // At exit, on a line of its own: whether V8 took kgctl's code cache.
  writeFileSync(
    probe,
    [
      "const loader = () => Object.keys(require.cache).find((f) => f.endsWith('/dist/cli/kgctl.js'));",
      "process.on('exit', () => process.stderr.write('\\n' + JSON.stringify({ rejected: require.cache[loader()].exports.codeCacheRejected() })));",
    ].join('\n'),
  );
});
after(() => rmSync(dir, { recursive: true, force: true }));

test("bin/kgctl's #! line gives node no V8 flags", () => {
  assert.deepEqual(nodeFlags(kgctl), []);
});

test('kgctl run through its #! line takes the code cache the build trained', () => {
  // Without a cache there is nothing to reject: the build must have written one.
  assert.equal(readdirSync(join(root, 'dist', 'cli')).filter((f) => /^kgctl-[0-9a-f]+\.cache$/.test(f)).length, 1);
  const r = spawnSync(kgctl, ['plan', 'aws-euw-1', '--cluster', example, '-o', 'json'], {
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: `--require ${probe}` },
  });
  assert.equal(r.status, 0, r.stderr);
  assert.equal((JSON.parse(r.stdout) as { node: string }).node, 'aws-euw-1');
  assert.deepEqual(JSON.parse(r.stderr.split('\n').at(-1)!), { rejected: false });
});
