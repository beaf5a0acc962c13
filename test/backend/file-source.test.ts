import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { stringify } from 'yaml';
import { FileSource } from '../../src/backend/file-source.js';
import { UsageError } from '../../src/model/errors.js';
import type { KubeObject } from '../../src/model/parse.js';
import { node, peer } from '../helpers/cluster.js';

/** Polls until `condition` holds (a liveness wait; the timeout is far above what it needs). */
async function waitUntil(what: string, condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function list(...items: KubeObject[]): string {
  return stringify({ apiVersion: 'v1', kind: 'List', items });
}

function tempFile(t: TestContext, text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'kilo-file-source-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'cluster.yaml');
  writeFileSync(path, text);
  return path;
}

function names(source: FileSource): string[] {
  return source
    .objects()
    .map((o) => `${o.kind}/${o.metadata?.name}`)
    .sort();
}

function annotations(source: FileSource, name: string): Record<string, string> {
  return source.objects().find((o) => o.kind === 'Node' && o.metadata?.name === name)?.metadata?.annotations ?? {};
}

describe('FileSource', () => {
  test('start reads every Node and Peer of the file', async (t) => {
    const path = tempFile(
      t,
      list(node('a', { location: 'eu' }), node('b'), peer('laptop', { allowedIPs: ['10.5.0.1/32'] })),
    );
    const source = new FileSource(path, { now: () => 42_000 });
    assert.equal(source.synced(), false);
    await source.start();
    t.after(() => source.stop());
    assert.equal(source.synced(), true);
    assert.equal(source.lastSync(), 42_000);
    assert.deepEqual(names(source), ['Node/a', 'Node/b', 'Peer/laptop']);
  });

  test('start fails with a UsageError naming a missing file', async () => {
    const source = new FileSource('/nonexistent/kilo/cluster.yaml');
    await assert.rejects(
      source.start(),
      (e: Error) => e instanceof UsageError && e.message.includes('/nonexistent/kilo/cluster.yaml'),
    );
  });

  test('patches change annotations in memory only; null deletes', async (t) => {
    const text = list(node('a', { location: 'eu', annotations: { 'example.com/old': 'x' } }), node('b'));
    const path = tempFile(t, text);
    const source = new FileSource(path);
    await source.start();
    t.after(() => source.stop());
    let changes = 0;
    source.onChange(() => changes++);

    await source.patchNodeAnnotations('a', { 'kilo.squat.ai/endpoint': '198.51.100.1:51820', 'example.com/old': null });
    assert.equal(changes, 1);
    const a = annotations(source, 'a');
    assert.equal(a['kilo.squat.ai/endpoint'], '198.51.100.1:51820');
    assert.equal('example.com/old' in a, false);
    assert.equal(a['kilo.squat.ai/location'], 'eu', 'other annotations kept');
    assert.equal(annotations(source, 'b')['kilo.squat.ai/endpoint'], undefined, 'other nodes untouched');
    assert.equal(readFileSync(path, 'utf8'), text, 'the file is not written');
  });

  test('a patch of a node not in the file fails naming the node and the file', async (t) => {
    const path = tempFile(t, list(node('a')));
    const source = new FileSource(path);
    await source.start();
    await assert.rejects(
      source.patchNodeAnnotations('ghost', { x: 'y' }),
      (e: Error) => e.message.includes('"ghost"') && e.message.includes(path),
    );
  });

  test('watching: edits and replacements of the file are read; patches survive them', async (t) => {
    const path = tempFile(t, list(node('a'), node('b')));
    const source = new FileSource(path, { watch: true, debounceMs: 20 });
    await source.start();
    t.after(() => source.stop());
    let changes = 0;
    source.onChange(() => changes++);
    await source.patchNodeAnnotations('a', { 'kilo.squat.ai/endpoint': '198.51.100.1:51820' });

    // Written in place.
    writeFileSync(path, list(node('a'), node('b'), node('c')));
    await waitUntil('node c is read', () => names(source).includes('Node/c'));
    assert.equal(
      annotations(source, 'a')['kilo.squat.ai/endpoint'],
      '198.51.100.1:51820',
      'the patch is laid over the new content',
    );

    // Replaced by rename, as editors and `kubectl get … > tmp && mv` do.
    const tmp = `${path}.tmp`;
    writeFileSync(tmp, list(node('a'), peer('laptop', { allowedIPs: ['10.5.0.1/32'] })));
    renameSync(tmp, path);
    await waitUntil('the replaced file is read', () => names(source).join() === 'Node/a,Peer/laptop');
    assert.ok(changes >= 3, `onChange fired for the patch and both rewrites (${changes})`);
  });

  test('watching: a broken write keeps the objects read before, the next good one is read', async (t) => {
    const path = tempFile(t, list(node('a')));
    const warnings: string[] = [];
    const logger = { debug() {}, info() {}, error() {}, warn: (_o: object, msg: string) => void warnings.push(msg) };
    const source = new FileSource(path, { watch: true, debounceMs: 20, logger });
    await source.start();
    t.after(() => source.stop());

    writeFileSync(path, 'items: [unclosed\n');
    await waitUntil('the broken write was noticed', () => warnings.length > 0);
    assert.deepEqual(names(source), ['Node/a']);

    writeFileSync(path, '');
    await waitUntil('the truncation was noticed', () => warnings.length > 1);
    assert.deepEqual(names(source), ['Node/a'], 'an empty file is taken for a write in progress');

    writeFileSync(path, list(node('a'), node('z')));
    await waitUntil('the good write is read', () => names(source).includes('Node/z'));
  });
});
