/**
 * How dist/cli/kg.js and dist/cli/kgctl.js run their bundle: one CommonJS script
 * (scripts/build.mjs), compiled with the V8 code cache the build wrote after training runs, so
 * that a start neither parses the bundle nor compiles again, function by function, the code a
 * command runs (Node 20 has no compile cache for ES modules). A cache V8 rejects (another Node,
 * other V8 flags) or a missing one only costs the compiling: the script runs the same.
 */
import type { Script } from 'node:vm';

// process.getBuiltinModule, not `import`: an ES module's import of node:fs reads every export of
// it, which loads the stream modules (~3 ms).
const { readFileSync, writeFileSync } = process.getBuiltinModule('node:fs');
const nodeModule = process.getBuiltinModule('node:module');
const path = process.getBuiltinModule('node:path');
const vm = process.getBuiltinModule('node:vm');

export interface CachedScript<T> {
  /** What the script put in module.exports. */
  exports: T;
  /** True when V8 did not take the cache (see test/imports.test.ts); false too when there was none. */
  rejected: boolean;
  /** Writes the code cache of every function compiled so far (the build's training). */
  writeCache(): void;
}

/** Runs `bundle` as a CommonJS module, compiled with the code cache in `cacheFile` if there is one. */
export function runCached<T>(bundle: string, cacheFile: string): CachedScript<T> {
  let cachedData: Buffer | undefined;
  try {
    cachedData = readFileSync(cacheFile);
  } catch {
    // No cache (a build that could not train): compiled as any script.
  }
  // The wrapper of a CommonJS module, so that the bundle's `require` finds its neighbours.
  const script: Script = new vm.Script(
    `(function (exports, require, module, __filename, __dirname) {${readFileSync(bundle, 'utf8')}\n})`,
    { filename: bundle, cachedData },
  );
  const module = { exports: {} as T };
  (script.runInThisContext() as (...args: unknown[]) => void)(
    module.exports,
    nodeModule.createRequire(bundle),
    module,
    bundle,
    path.dirname(bundle),
  );
  return {
    exports: module.exports,
    rejected: script.cachedDataRejected === true,
    writeCache: () => writeFileSync(cacheFile, script.createCachedData()),
  };
}

/**
 * V8 optimises a function once it has run a while (its interrupt budget, 66 KB of bytecode run by
 * default). A `kgctl plan` or a `kg apply` is one pass of a fraction of a second over thousands of
 * nodes, where the default made V8 optimise (on a second thread) most of parse, conflicts,
 * topology and plan, to run them a few more milliseconds: at 5,000 nodes ~0.1 s of CPU more for
 * the whole process. With a budget eight times as large, what still runs long enough (20,000
 * nodes) is optimised still. Set before the script is compiled, and so in the build's training
 * too: V8 rejects a code cache made under other flags.
 */
export function oneShotBudget(): void {
  process.getBuiltinModule('node:v8').setFlagsFromString('--interrupt-budget=540672');
}
