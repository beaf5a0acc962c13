import { closeSync, fsyncSync, openSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { checkedPrivateKey, KeyFileError, writeNewKeyFile } from './keys.js';

/**
 * Replaces the key file at `path` with `privateKey`: written to a temporary file of mode 0600 in the
 * same directory, flushed, then renamed over the old one. A reader (the next start of the agent) sees
 * the old key or the new one, never a part of either, and the key is never readable by others, not
 * even for a moment. The directory is flushed too, so the rename survives a crash of the machine:
 * the key the device switches to is the key the node restarts with.
 * @throws KeyFileError naming the path, never the key.
 */
export function replaceKeyFile(path: string, privateKey: string): void {
  checkedPrivateKey(privateKey);
  const dir = dirname(path);
  // 'wx' below refuses an existing name, so a leftover of a crash is never written through.
  const tmp = join(dir, `.${basename(path)}-${process.pid}-${process.hrtime.bigint()}`);
  try {
    writeNewKeyFile(tmp, privateKey);
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw new KeyFileError(path, (e as Error).message);
  }
  syncDirectory(dir);
}

/** Flushes a directory's entries; where a file system cannot, the rename is still atomic. */
function syncDirectory(dir: string): void {
  let fd: number | null = null;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    // Some file systems refuse fsync on a directory (EINVAL): nothing better to do.
  } finally {
    if (fd !== null) closeSync(fd);
  }
}

/** When the key in `path` was written (ms since the epoch): its file's modification time. */
export function keyWrittenAt(path: string): number {
  return statSync(path).mtimeMs;
}
