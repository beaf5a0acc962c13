/**
 * How dist/cli/kg.js and dist/cli/kgctl.js run their bundle: one CommonJS script
 * (scripts/build.mjs), compiled with the V8 code cache the build wrote after training runs, so
 * that a start neither parses the bundle nor compiles again, function by function, the code a
 * command runs (docs/performance.md#bundling-and-the-code-cache). A cache V8 rejects (another Node,
 * other V8 flags) or a missing one only costs the compiling: the script runs the same.
 */
import type { Script } from 'node:vm';

// process.getBuiltinModule: an `import` of node:fs loads the stream modules (docs/performance.md#lazy-loading).
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
 * V8's interrupt budget eight times the default, for one short pass: optimising it cost more CPU than
 * it saved (docs/performance.md#the-interrupt-budget). Set before the script is compiled, and so in
 * the build's training too: V8 rejects a code cache made under other flags.
 */
export function oneShotBudget(): void {
  process.getBuiltinModule('node:v8').setFlagsFromString('--interrupt-budget=540672');
}
