/**
 * docs/ stays true: every command's flag table is there and matches the commander definitions,
 * every annotation is documented, every picture a page shows exists.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { commands, docFiles, docsDir, flagTable, renderDoc } from '../../scripts/docs-flags.js';
import { Annotation } from '../../src/model/annotations.js';

const docs = docFiles().map((file) => ({ file, text: readFileSync(file, 'utf8') }));

test('every flag table in docs/ matches the command definitions', () => {
  for (const { file, text } of docs) {
    assert.equal(
      renderDoc(text, file),
      text,
      `${file}: stale flag tables; run: node --import tsx scripts/docs-flags.ts --write`,
    );
  }
});

test('every command of kg and kgctl has its flag table, listing every flag', () => {
  const documented = new Map<string, string>();
  for (const { text } of docs) {
    for (const m of text.matchAll(/<!-- BEGIN FLAGS: ([^>]+?) -->\n([\s\S]*?)<!-- END FLAGS -->/g))
      documented.set(m[1]!, m[2]!);
  }
  for (const [path, cmd] of commands()) {
    const table = documented.get(path);
    assert.ok(
      table !== undefined,
      `no flag table for \`${path}\` in docs/ (add <!-- BEGIN FLAGS: ${path} --><!-- END FLAGS --> and run scripts/docs-flags.ts --write)`,
    );
    assert.equal(table.trim(), flagTable(cmd));
    for (const o of cmd.options.filter((x) => !x.hidden))
      assert.ok(table.includes(`\`${o.flags}\``), `${path}: ${o.flags} is not documented`);
  }
  for (const path of ['kg run', 'kg apply', 'kg webhook', 'kgctl plan', 'kgctl graph', 'kgctl connect'])
    assert.ok(documented.has(path), path);
});

test('every annotation is in docs/annotations.md', () => {
  const text = readFileSync(join(docsDir, 'annotations.md'), 'utf8');
  for (const name of Object.values(Annotation)) assert.ok(text.includes(`\`${name}\``), `${name} is not documented`);
});

test('every picture and local link in docs/ exists', () => {
  for (const { file, text } of docs) {
    for (const m of text.matchAll(/\]\(([^)#\s]+)\)/g)) {
      const target = m[1]!;
      if (/^[a-z]+:/.test(target)) continue;
      assert.ok(existsSync(join(dirname(file), target)), `${file}: ${target} does not exist`);
      if (target.endsWith('.svg')) assert.match(readFileSync(join(dirname(file), target), 'utf8'), /<svg[\s>]/);
    }
  }
});
