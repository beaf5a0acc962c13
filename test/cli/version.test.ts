/**
 * `kg --version` and `kgctl --version`: the package version and the git commit, from a checkout
 * (git) and from an image build (dist/build-info.json, which the Dockerfile writes).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { buildInfo, versionLine } from '../../src/cli/version.js';
import { ensureBuilt, root } from './built.js';

const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;

test('kg --version and kgctl --version print the version and the commit of this checkout', () => {
  ensureBuilt();
  const head = spawnSync('git', ['-C', root, 'rev-parse', 'HEAD'], { encoding: 'utf8' });
  const commit = head.status === 0 ? head.stdout.trim() : 'unknown';
  for (const cli of ['kg', 'kgctl']) {
    for (const flag of ['--version', '-V']) {
      const r = spawnSync(process.execPath, [join(root, 'bin', cli), flag], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stdout, `${cli} ${version} (commit ${commit})\n`);
    }
  }
});

test('the version line names the commit, or says it is unknown', () => {
  assert.equal(versionLine('kg', { version: '1.2.3', commit: 'abc' }), 'kg 1.2.3 (commit abc)');
  assert.equal(buildInfo().version, version);
  assert.match(buildInfo().commit, /^([0-9a-f]{40,64}|unknown)$/);
});
