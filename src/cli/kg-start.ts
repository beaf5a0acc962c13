/**
 * dist/cli/kg.js, what bin/kg requires (CommonJS, scripts/build.mjs): kg's bundle is one CommonJS script, run with a code cache
 * (code-cache.ts). `kg apply` is one short pass, as a kgctl command is: the one-shot budget, and
 * the cache trained under it (KG_BUNDLE.apply.cache). The agent and the other commands keep V8's
 * default budget, and their cache (.cache) is trained under that: V8 rejects a cache made under
 * other flags, bin/kg's own included (the build trains under those).
 *
 * The command helper of kg apply and the agent (a Node process of its own,
 * src/dataplane/helper-process.ts) is started before the bundle is loaded: its start-up then
 * overlaps kg's on the other core (docs/performance.md#the-command-helper).
 */
import { startHelperEarly } from '../dataplane/helper-process.js';
import { oneShotBudget, runCached, type CachedScript } from './code-cache.js';

/** The bundle's file name, set by scripts/build.mjs: named by its content, and so are its caches. */
declare const KG_BUNDLE: string;

interface Kg {
  main(argv: string[]): Promise<void>;
  train(dir: string): Promise<void>;
}

const bundle = process.getBuiltinModule('node:path').join(import.meta.dirname, KG_BUNDLE);
let kg: CachedScript<Kg> | undefined;

/** Loaded once, by the first command: which one decides V8's budget and so the cache. */
function load(argv: readonly string[]): CachedScript<Kg> {
  const oneShot = argv[0] === 'apply';
  if (oneShot) oneShotBudget();
  return runCached<Kg>(bundle, bundle.replace(/\.cjs$/, oneShot ? '.apply.cache' : '.cache'));
}

/**
 * kg apply and the agent (kg run, the default command: `kg FLAGS`) run commands from the start; help
 * and the version run none, nor do the other commands.
 */
function runsCommands(argv: readonly string[]): boolean {
  if (argv.some((a) => a === '--help' || a === '-h' || a === '--version' || a === '-V')) return false;
  const first = argv[0];
  return first === 'apply' || first === 'run' || first === undefined || first.startsWith('-');
}

export function main(argv: string[]): Promise<void> {
  if (runsCommands(argv)) startHelperEarly();
  kg ??= load(argv);
  return kg.exports.main(argv);
}

/** Whether V8 rejected the code cache of this run (test/imports.test.ts). */
export function codeCacheRejected(): boolean | undefined {
  return kg?.rejected;
}

/**
 * The build's training, in a process of its own per cache: runs `kg apply` against an in-memory
 * machine on `dir`/cluster.json (kg-training.ts), then writes the cache of the command `argv0`.
 */
export async function writeCodeCache(argv0: string, dir: string): Promise<void> {
  kg = load([argv0]);
  await kg.exports.train(dir);
  kg.writeCache();
}
