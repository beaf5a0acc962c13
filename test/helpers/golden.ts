import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Golden files live in test/golden; `UPDATE_GOLDEN=1` rewrites them from the actual output. */
export const goldenDir = join(import.meta.dirname, '..', 'golden');

/**
 * Compares text a user reads with its golden file. A missing file fails (so a typo in a name
 * cannot pass silently) unless UPDATE_GOLDEN=1, which writes it; review the diff before committing.
 */
export function assertGolden(name: string, actual: string): void {
  const path = join(goldenDir, name);
  if (process.env['UPDATE_GOLDEN'] === '1') {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, actual);
    return;
  }
  if (!existsSync(path)) assert.fail(`no golden file ${path}: run with UPDATE_GOLDEN=1 to create it`);
  assert.equal(actual, readFileSync(path, 'utf8'), `output differs from ${path} (UPDATE_GOLDEN=1 rewrites it)`);
}
