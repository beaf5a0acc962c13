/**
 * dist/cli/kgctl.js, what bin/kgctl imports: kgctl's bundle is one CommonJS script
 * (scripts/build.mjs), compiled here with the V8 code cache the build wrote after training runs,
 * so that a start neither parses the bundle nor compiles again, function by function, the code a
 * command runs (Node 20 has no compile cache for ES modules). A cache V8 rejects (another Node,
 * other V8 flags) or a missing one only costs the compiling: the script runs the same.
 */
import type { Script } from 'node:vm';

/** The bundle's file name, set by scripts/build.mjs: named by its content, and so is its cache. */
declare const KGCTL_BUNDLE: string;

// process.getBuiltinModule, not `import`: an ES module's import of node:fs reads every export of
// it, which loads the stream modules (~3 ms).
const { readFileSync, writeFileSync } = process.getBuiltinModule('node:fs');
const nodeModule = process.getBuiltinModule('node:module');
const path = process.getBuiltinModule('node:path');
const vm = process.getBuiltinModule('node:vm');

/**
 * V8 optimises a function once it has run a while (its interrupt budget, 66 KB of bytecode run by
 * default). A `kgctl plan` is one pass of a fraction of a second over thousands of nodes, where the
 * default made V8 optimise (on a second thread) most of parse, conflicts, topology and plan, to run
 * them a few more milliseconds: at 5,000 nodes ~0.1 s of CPU more for the whole process. With a
 * budget eight times as large, what still runs long enough (20,000 nodes) is optimised still. Set
 * before the script is compiled, and so in the build's training too: V8 rejects a code cache made
 * under other flags.
 */
process.getBuiltinModule('node:v8').setFlagsFromString('--interrupt-budget=540672');

interface Kgctl {
  main(argv: string[]): Promise<void>;
}

const bundle = path.join(import.meta.dirname, KGCTL_BUNDLE);
const cacheFile = bundle.replace(/\.cjs$/, '.cache');

function load(): { kgctl: Kgctl; script: Script } {
  let cachedData: Buffer | undefined;
  try {
    cachedData = readFileSync(cacheFile);
  } catch {
    // No cache (a build that could not train): compiled as any script.
  }
  // The wrapper of a CommonJS module, so that the bundle's `require` finds its neighbours.
  const script = new vm.Script(
    `(function (exports, require, module, __filename, __dirname) {${readFileSync(bundle, 'utf8')}\n})`,
    { filename: bundle, cachedData },
  );
  const module = { exports: {} as Kgctl };
  (script.runInThisContext() as (...args: unknown[]) => void)(
    module.exports,
    nodeModule.createRequire(bundle),
    module,
    bundle,
    import.meta.dirname,
  );
  return { kgctl: module.exports, script };
}

const { kgctl, script } = load();

export function main(argv: string[]): Promise<void> {
  return kgctl.main(argv);
}

/**
 * The build's training: runs kgctl with each argv, then writes the code cache, which holds every
 * function those runs compiled.
 */
export async function writeCodeCache(runs: string[][]): Promise<void> {
  for (const argv of runs) await kgctl.main(argv);
  writeFileSync(cacheFile, script.createCachedData());
}
