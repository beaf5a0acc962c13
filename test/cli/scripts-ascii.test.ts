/**
 * kg's and kgctl's scripts are ASCII (scripts/build.mjs, asciiOnly): Node reads a script with one
 * character past it as a two-byte string, twice its bytes decoded and copied at every start
 * (docs/performance.md, "kgctl plan at 5,000 nodes, phase by phase").
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { ensureBuilt, root } from './built.js';

before(ensureBuilt);

test("kg's and kgctl's scripts hold no character past ASCII", () => {
  const dir = join(root, 'dist', 'cli');
  const scripts = readdirSync(dir).filter((f) => /^kg(ctl)?-[0-9a-f]+\.cjs$/.test(f));
  assert.equal(scripts.length, 2);
  for (const f of scripts) {
    const text = readFileSync(join(dir, f), 'utf8');
    const at = text.search(/[^\x00-\x7f]/);
    assert.equal(at, -1, `${f}: ${JSON.stringify(text.slice(Math.max(0, at - 40), at + 10))}`);
  }
});
