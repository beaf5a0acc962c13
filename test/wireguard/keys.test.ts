import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { generatePrivateKey, isKey, KeyFileError, loadOrCreateKey, publicKeyOf } from '../../src/wireguard/keys.js';
import { skipUnless } from '../helpers/requirements.js';

const noWg = skipUnless(spawnSync('wg', ['--version']).status === 0, 'needs the wg command');

function tempDir(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'kt-keys-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('generated keys are 32-byte base64 keys and differ', () => {
  const a = generatePrivateKey();
  const b = generatePrivateKey();
  assert.ok(isKey(a) && isKey(b));
  assert.notEqual(a, b);
  assert.ok(isKey(publicKeyOf(a)));
  assert.notEqual(publicKeyOf(a), a);
});

test('publicKeyOf matches a known RFC 7748 vector', () => {
  // RFC 7748 section 6.1: Alice's private key and public key.
  const priv = Buffer.from('77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a', 'hex').toString(
    'base64',
  );
  const pub = Buffer.from('8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a', 'hex').toString('base64');
  assert.equal(publicKeyOf(priv), pub);
});

test('publicKeyOf agrees with wg pubkey', { skip: noWg }, () => {
  const keys = [
    ...Array.from({ length: 5 }, () => generatePrivateKey()),
    // wg clamps; so does X25519 in OpenSSL: an unclamped key must give the same answer.
    Buffer.alloc(32, 0xff).toString('base64'),
    execFileSync('wg', ['genkey'], { encoding: 'utf8' }).trim(),
  ];
  for (const priv of keys) {
    const expected = execFileSync('wg', ['pubkey'], { input: `${priv}\n`, encoding: 'utf8' }).trim();
    assert.equal(publicKeyOf(priv), expected);
  }
});

test('publicKeyOf rejects a non-key without echoing it', () => {
  const secretish = 'c2VjcmV0LXNob3VsZC1uZXZlci1hcHBlYXI=';
  assert.throws(
    () => publicKeyOf(secretish),
    (e: Error) => !e.message.includes(secretish) && /private key/.test(e.message),
  );
});

test('loadOrCreateKey creates the key 0600 in a new 0700 directory, then keeps it', (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'var/lib/kilo/key');
  const key = loadOrCreateKey(path);
  assert.ok(isKey(key));
  assert.equal(readFileSync(path, 'utf8'), `${key}\n`);
  assert.equal(statSync(path).mode & 0o777, 0o600);
  assert.equal(statSync(join(dir, 'var/lib/kilo')).mode & 0o777, 0o700);
  assert.equal(loadOrCreateKey(path), key, 'an existing key is never regenerated');
  assert.deepEqual(
    execFileSync('ls', ['-A', join(dir, 'var/lib/kilo')], { encoding: 'utf8' })
      .trim()
      .split('\n'),
    ['key'],
    'no temporary file is left behind',
  );
});

test('loadOrCreateKey reads a key written by wg genkey and tightens a loose mode', (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'key');
  const key = generatePrivateKey();
  writeFileSync(path, `${key}\n`);
  chmodSync(path, 0o644);
  assert.equal(loadOrCreateKey(path), key);
  assert.equal(statSync(path).mode & 0o777, 0o600);
});

test('a malformed key file is an error naming the path, never the content, and is kept', (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'key');
  const content = 'this-is-not-a-key-but-still-secret';
  writeFileSync(path, content, { mode: 0o600 });
  assert.throws(
    () => loadOrCreateKey(path),
    (e: Error) => e instanceof KeyFileError && e.message.includes(path) && !e.message.includes(content),
  );
  assert.equal(readFileSync(path, 'utf8'), content, 'a malformed key is not replaced');
});

test('an unreadable key path (a directory) is an error naming the path', (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'key');
  mkdirSync(path);
  assert.throws(
    () => loadOrCreateKey(path),
    (e: Error) => e instanceof KeyFileError && e.message.includes(path),
  );
});
