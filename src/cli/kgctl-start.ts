/**
 * dist/cli/kgctl.js, what bin/kgctl requires (CommonJS, scripts/build.mjs): kgctl's bundle is one CommonJS script, run with its
 * code cache (code-cache.ts). Every kgctl command is one short pass: always the one-shot budget.
 */
import { oneShotBudget, runCached } from './code-cache.js';

/** The bundle's file name, set by scripts/build.mjs: named by its content, and so is its cache. */
declare const KGCTL_BUNDLE: string;

interface Kgctl {
  main(argv: string[]): Promise<void>;
}

const bundle = process.getBuiltinModule('node:path').join(import.meta.dirname, KGCTL_BUNDLE);
// Standard output first (net for a pipe, tty or a file's stream), then the budget: a V8 flag set at run
// time makes V8 reject Node's code cache of every built-in module compiled after it, as one on the
// command line does (docs/performance.md#the-heap); every kgctl command writes there.
void process.stdout;
oneShotBudget();
const kgctl = runCached<Kgctl>(bundle, bundle.replace(/\.cjs$/, '.cache'));

export function main(argv: string[]): Promise<void> {
  return kgctl.exports.main(argv);
}

/** Whether V8 rejected the code cache of this run (test/cli/kgctl-start.test.ts). */
export function codeCacheRejected(): boolean {
  return kgctl.rejected;
}

/**
 * The build's training: runs kgctl with each argv, then writes the code cache, which holds every
 * function those runs compiled.
 */
export async function writeCodeCache(runs: string[][]): Promise<void> {
  for (const argv of runs) await kgctl.exports.main(argv);
  kgctl.writeCache();
}
