/**
 * replaceKeyFile: the rotated key replaces the file by rename (readers never see a partial file,
 * the old file's loose mode is not inherited), 0600, nothing left beside it, and its errors name
 * the path and never a key.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { keyWrittenAt, replaceKeyFile } from '../../src/wireguard/key-file.js';
import { generatePrivateKey, KeyFileError, loadOrCreateKey } from '../../src/wireguard/keys.js';

function tempDir(t: { after(f: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'kilo-key-file-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('replaceKeyFile puts a new file in place: 0600 whatever the old mode, the next start reads it, no temporary left', (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'key');
  const old = loadOrCreateKey(path);
  chmodSync(path, 0o644);
  const inode = statSync(path).ino;
  const next = generatePrivateKey();
  const umask = process.umask(0);
  try {
    replaceKeyFile(path, next);
  } finally {
    process.umask(umask);
  }
  assert.equal(readFileSync(path, 'utf8'), `${next}\n`);
  assert.equal(statSync(path).mode & 0o777, 0o600);
  assert.notEqual(statSync(path).ino, inode, 'a new file renamed into place, not the old one written over');
  assert.deepEqual(readdirSync(dir), ['key'], 'nothing but the key file is left');
  assert.equal(loadOrCreateKey(path), next, 'the next start reads the new key');
  assert.notEqual(next, old);
  assert.ok(Math.abs(keyWrittenAt(path) - Date.now()) < 60_000, 'its age starts now');
});

test('replaceKeyFile refuses a value that is not a key without writing, naming no value', (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'key');
  writeFileSync(path, 'untouched\n', { mode: 0o600 });
  const notKey = 'c2VjcmV0LWJ1dC1ub3QtYS1rZXk=';
  assert.throws(
    () => replaceKeyFile(path, notKey),
    (e: Error) => e instanceof TypeError && !e.message.includes(notKey),
  );
  assert.equal(readFileSync(path, 'utf8'), 'untouched\n');
  assert.deepEqual(readdirSync(dir), ['key']);
});

test('replaceKeyFile where it cannot write: a KeyFileError naming the path and not the key; nothing left', (t) => {
  const dir = tempDir(t);
  const key = generatePrivateKey();
  // A non-empty directory where the key file should be: the rename fails after the temporary file was written.
  const target = join(dir, 'key');
  mkdirSync(target);
  writeFileSync(join(target, 'f'), '');
  assert.throws(
    () => replaceKeyFile(target, key),
    (e: Error) => e instanceof KeyFileError && e.message.includes(target) && !e.message.includes(key),
  );
  assert.deepEqual(readdirSync(dir), ['key'], 'no temporary file left beside it');
  assert.throws(
    () => replaceKeyFile(join(dir, 'missing', 'key'), key),
    (e: Error) => e instanceof KeyFileError && !e.message.includes(key),
  );
});
