/**
 * `npm run fuzz`: the properties of test/mesh/properties.test.ts with many more cases, then kgctl
 * itself on generated broken snapshot files, counting what the issue counted: stack traces,
 * timeouts, multi-line errors and the largest RSS. Figures, not assertions: exit 1 on a failure.
 * FUZZ_RUNS (cases per property, default 5000), FUZZ_FILES (kgctl runs, default 60), FUZZ_SEED.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { mutatedClusterArb, junk } from './arbitraries.js';
import * as properties from './properties.js';

const runs = Number(process.env['FUZZ_RUNS'] ?? 5000);
const files = Number(process.env['FUZZ_FILES'] ?? 60);
const seed = process.env['FUZZ_SEED'] === undefined ? Date.now() % 2 ** 31 : Number(process.env['FUZZ_SEED']);
let failed = false;

console.log(`seed ${seed}`);
for (const [name, property] of Object.entries(properties)) {
  const start = process.hrtime.bigint();
  try {
    const c = property(runs, seed);
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    console.log(`${name}: ${c.cases} cases, ${c.plans} plans checked, ${c.refusals} refusals, ${ms.toFixed(0)} ms`);
  } catch (e) {
    failed = true;
    console.log(`${name}: FAILED ${(e as Error).message.split('\n').slice(0, 6).join(' | ')}`);
  }
}

const dir = mkdtempSync(join(tmpdir(), 'kilo-fuzz-'));
const snapshots = fc.sample(
  fc.oneof(
    {
      weight: 8,
      arbitrary: mutatedClusterArb.map((items) => JSON.stringify({ apiVersion: 'v1', kind: 'List', items })),
    },
    { weight: 1, arbitrary: junk.map((j) => JSON.stringify(j)) },
    { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
  ),
  { numRuns: files, seed },
);
const commands = [['plan', 'a'], ['graph'], ['showconf', 'node', 'a']];
let traces = 0;
let timeouts = 0;
let multiline = 0;
let bugs = 0;
let maxRSS = 0;
const exits = new Map<string, number>();
for (const [i, text] of snapshots.entries()) {
  const file = join(dir, `s${i}.json`);
  writeFileSync(file, text);
  const args = commands[i % commands.length]!;
  const r = spawnSync('/usr/bin/time', ['-f', '%M', 'bin/kgctl', ...args, '--cluster', file], {
    encoding: 'utf8',
    timeout: 20_000,
  });
  if (r.error || r.signal) {
    timeouts++;
    continue;
  }
  const lines = r.stderr.trimEnd().split('\n');
  maxRSS = Math.max(maxRSS, Number(lines.pop()));
  const errors = lines.filter((l) => !l.startsWith('warning: ') && !l.startsWith('Command exited with'));
  if (lines.some((l) => /^\s+at /.test(l))) traces++;
  if (errors.length > 1) multiline++;
  if (errors.some((l) => l.includes('internal error'))) bugs++;
  const key = `exit ${r.status}`;
  exits.set(key, (exits.get(key) ?? 0) + 1);
}
rmSync(dir, { recursive: true, force: true });
console.log(
  `kgctl on ${snapshots.length} broken snapshots: stack traces ${traces}, timeouts (20 s) ${timeouts}, ` +
    `errors of more than one line ${multiline}, internal errors ${bugs}, max RSS ${(maxRSS / 1024).toFixed(0)} MiB, ` +
    [...exits].map(([k, n]) => `${k}: ${n}`).join(', '),
);
if (failed || traces > 0 || timeouts > 0 || multiline > 0 || bugs > 0) process.exitCode = 1;
