import {
  chmodSync,
  closeSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * node:crypto is loaded by the first key operation, so kgctl commands that never touch a key (plan,
 * graph) start without it: docs/performance.md#lazy-loading.
 */
const crypto = () => process.getBuiltinModule('node:crypto');

/** Where Kilo keeps the node's private key. */
export const defaultKeyPath = '/var/lib/kilo/key';

// DER framing of an X25519 key: the raw 32 bytes follow these prefixes (RFC 8410).
const pkcs8Prefix = Buffer.from('302e020100300506032b656e04220420', 'hex');
const spkiLength = 44;

const base64Key = /^[A-Za-z0-9+/]{43}=$/;

/** Whether `value` is the base64 text of a 32-byte WireGuard key. */
export function isKey(value: string): boolean {
  return base64Key.test(value) && Buffer.from(value, 'base64').length === 32;
}

/** A fresh private key, base64 (what `wg genkey` prints). */
export function generatePrivateKey(): string {
  const { privateKey } = crypto().generateKeyPairSync('x25519');
  const der = privateKey.export({ format: 'der', type: 'pkcs8' });
  return der.subarray(der.length - 32).toString('base64');
}

/**
 * The public key of a base64 private key (what `wg pubkey` prints).
 * @throws TypeError when `privateKey` is not a key; the message never contains the value.
 */
export function publicKeyOf(privateKey: string): string {
  // Remembered: an agent asks for it on every write (docs/performance.md#wireguard).
  if (privateKey === lastPublicKey.of) return lastPublicKey.is;
  const is = derivePublicKey(privateKey);
  lastPublicKey = { of: privateKey, is };
  return is;
}

let lastPublicKey = { of: '', is: '' };

/**
 * `privateKey`, checked to be a key as publicKeyOf checks it, without deriving anything.
 * @throws TypeError when it is not; the message never contains the value.
 */
export function checkedPrivateKey(privateKey: string): string {
  if (!isKey(privateKey)) throw new TypeError('not a WireGuard private key (expected base64 of 32 bytes)');
  return privateKey;
}

function derivePublicKey(privateKey: string): string {
  checkedPrivateKey(privateKey);
  const der = Buffer.concat([pkcs8Prefix, Buffer.from(privateKey, 'base64')]);
  const spki = crypto()
    .createPublicKey(crypto().createPrivateKey({ key: der, format: 'der', type: 'pkcs8' }))
    .export({
      format: 'der',
      type: 'spki',
    });
  if (spki.length !== spkiLength) throw new Error(`unexpected X25519 SPKI length ${spki.length}`);
  return spki.subarray(spki.length - 32).toString('base64');
}

/** A key file that cannot be used; names the path, never the content. */
export class KeyFileError extends Error {
  constructor(
    readonly path: string,
    reason: string,
  ) {
    super(`key file ${path}: ${reason}`);
    this.name = 'KeyFileError';
  }
}

function readKey(path: string): string {
  const text = readFileSync(path, 'utf8').trim();
  if (!isKey(text))
    throw new KeyFileError(path, 'not a WireGuard private key (expected one line of base64 of 32 bytes)');
  return text;
}

/**
 * The node's private key from `path`, generated there when the file is absent (never when it
 * is merely unreadable or malformed: replacing a key would cut the node off until every peer
 * learns the new one). The directory is created 0700 and the file is written 0600.
 * @throws KeyFileError when the file exists but is not a key.
 */
export function loadOrCreateKey(path: string = defaultKeyPath): string {
  try {
    const key = readKey(path);
    // A key file anyone can read is a leaked key; tighten it rather than refuse to run.
    if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600);
    return key;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') {
      if (e instanceof KeyFileError) throw e;
      throw new KeyFileError(path, (e as Error).message);
    }
  }
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const key = generatePrivateKey();
  // Write beside the target and link it into place: readers never see a partial file, and
  // when two processes race, the first link wins and the other reads that key.
  const tmp = join(dir, `.key-${process.pid}-${Date.now()}`);
  writeNewKeyFile(tmp, key);
  try {
    linkSync(tmp, path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw new KeyFileError(path, (e as Error).message);
    return readKey(path);
  } finally {
    rmSync(tmp, { force: true });
  }
  return key;
}

/** Writes `key` to a file that must not exist yet, mode 0600, flushed to disk before it returns. */
export function writeNewKeyFile(path: string, key: string): void {
  const fd = openSync(path, 'wx', 0o600);
  try {
    writeSync(fd, `${key}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
