/** `kgctl … | head`: a reader that leaves early ends kgctl as it ends any Unix filter, without a trace. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { generateCluster } from '../../bench/generate.js';
import { ensureBuilt, root } from './built.js';

const dir = mkdtempSync(join(tmpdir(), 'kts-pipe-'));
const cluster = join(dir, 'cluster.json');

before(() => {
  ensureBuilt();
  // Far more plan than a pipe holds (64 KiB), so kgctl is still writing when the reader goes.
  writeFileSync(cluster, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: generateCluster(500, 5, 0) }));
});
after(() => rmSync(dir, { recursive: true, force: true }));

test('kgctl plan into a pipe closed after the first chunk: status 141 (SIGPIPE), nothing on stderr', async () => {
  const child = spawn(process.execPath, [
    join(root, 'bin', 'kgctl'),
    'plan',
    'node-00000',
    '--cluster',
    cluster,
    '-o',
    'json',
  ]);
  let stderr = '';
  let first = 0;
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  child.stdout.once('data', (b: Buffer) => {
    first = b.length;
    child.stdout.destroy();
  });
  const status = await new Promise<number | null>((resolve) => child.once('close', resolve));
  assert.ok(first > 0, 'kgctl wrote nothing');
  assert.equal(stderr, '');
  assert.equal(status, 141);
});
