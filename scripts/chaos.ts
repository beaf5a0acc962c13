/**
 * `npm run chaos -- --minutes N [--seed S] [--api-away-seconds 60]`: the lab under a random
 * schedule of faults with continuous traffic, invariants checked every second; prints a table per
 * fault kind and exits non-zero on any violation. Needs root (network namespaces). See docs/chaos.md.
 */
import { parseArgs } from 'node:util';
import { runChaos } from '../packages/lab/src/chaos/run.js';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '60' },
    seed: { type: 'string' },
    'api-away-seconds': { type: 'string', default: '60' },
    'state-dir': { type: 'string' },
  },
});
const whole = (name: string, v: string | undefined, min: number, max: number): number => {
  const n = Number(v);
  if (!/^\d+$/.test(v ?? '') || n < min || n > max) {
    console.error(`--${name}: want a whole number from ${min} to ${max}, got ${JSON.stringify(v)}`);
    process.exit(2);
  }
  return n;
};
const minutes = whole('minutes', values.minutes, 1, 10_000);
const seed = values.seed === undefined ? Date.now() % 1_000_000 : whole('seed', values.seed, 0, 2 ** 31);
const apiAwaySeconds = whole('api-away-seconds', values['api-away-seconds'], 1, 3600);
const id = `${process.pid % 10000}`;
const started = new Date();
const log = (l: string) => console.log(`[${((Date.now() - started.getTime()) / 1000).toFixed(0).padStart(5)} s] ${l}`);
log(`chaos: ${minutes} min, seed ${seed}, API server away ${apiAwaySeconds} s per outage`);
const r = await runChaos({
  minutes,
  seed,
  apiAwaySeconds,
  stateDir: values['state-dir'] ?? `/tmp/kilo-chaos-${id}`,
  prefix: `kc${id}-`,
  log,
});
console.log(`\n${r.table}\n`);
console.log(`pings: ${r.pings.sent} sent, ${r.pings.lost} lost`);
for (const [key, list] of r.footprints) {
  if (list.length < 2) continue;
  const [a, b] = [list[Math.min(12, list.length - 1)]!, list[list.length - 1]!];
  console.log(
    `${key.padEnd(22)} ${((b.at - list[0]!.at) / 60_000).toFixed(0).padStart(3)} min: RSS ${(a.rssKiB / 1024).toFixed(0)} → ${(b.rssKiB / 1024).toFixed(0)} MiB, fds ${a.fds} → ${b.fds}, children ${a.children} → ${b.children}`,
  );
}
const all = [
  ...r.records.flatMap((x) => x.violations.map((v) => `${x.kind}: ${v}`)),
  ...r.other.flatMap((o) => o.violations.map((v) => `${o.kind}: ${v}`)),
];
for (const v of all) console.log(`VIOLATION ${v}`);
console.log(`${all.length} violations; seed ${seed} replays the schedule`);
process.exitCode = all.length > 0 ? 1 : 0;
