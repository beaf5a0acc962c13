#!/usr/bin/env node
// Node 20's test runner takes no globs: find the test files and hand them over.
// Usage: node scripts/test.mjs [substring…] — only files whose path contains one of them.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function find(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return find(p);
    return name.endsWith('.test.ts') ? [p] : [];
  });
}

const filters = process.argv.slice(2);
const files = find('test')
  .filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)))
  .sort();
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
// Tests that need root, namespaces or a system tool record here what they skipped (test/helpers/requirements.ts).
const logDir = mkdtempSync(join(tmpdir(), 'kilo-ts-skips-'));
const skipLog = join(logDir, 'skipped');
const failureLog = join(logDir, 'failed');
const reporters = [
  '--test-reporter=tap',
  '--test-reporter-destination=stdout',
  `--test-reporter=${new URL('./failure-summary-reporter.mjs', import.meta.url).href}`,
  `--test-reporter-destination=${failureLog}`,
];
const r = spawnSync(process.execPath, ['--test', '--test-concurrency=1', ...reporters, '--import', 'tsx', ...files], {
  stdio: 'inherit',
  env: { ...process.env, KILO_TS_SKIP_LOG: skipLog },
});
let skipped = [];
try {
  skipped = [...new Set(readFileSync(skipLog, 'utf8').split('\n').filter(Boolean))];
} catch {
  // No file: nothing skipped.
}
let failed = '';
try {
  failed = readFileSync(failureLog, 'utf8');
} catch {
  // No file: the runner never started.
}
rmSync(logDir, { recursive: true, force: true });
if (failed.length > 0) {
  const bar = '#'.repeat(78);
  console.error([bar, '## FAILED (details above, in the TAP output):', failed.trimEnd(), bar].join('\n'));
}
if (skipped.length > 0) {
  const files = new Set(skipped.map((l) => l.split('\t')[0]));
  const reasons = [...new Set(skipped.map((l) => l.split('\t')[1]))];
  const bar = '!'.repeat(78);
  console.error(
    [
      bar,
      `!! ${files.size} test file(s) SKIPPED tests this machine cannot run: ${reasons.join('; ')}.`,
      '!! A green run here does not cover the real dataplane. Run as root with the system packages, and',
      '!! set KILO_TS_REQUIRE_ROOT_TESTS=1 to make any such skip a failure (CI does).',
      ...[...files].sort().map((f) => `!!   ${f}`),
      bar,
    ].join('\n'),
  );
}
process.exit(r.status ?? 1);
