import { spawn } from 'node:child_process';
import { closeSync, openSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { nodeCommand } from '../../../scripts/node-flags.mjs';
import { repository } from './repository.js';
import { run, sleep } from './sh.js';
import { isAlive, processStart, type StateDir } from './state.js';

const fromSource = import.meta.url.endsWith('.ts');

/**
 * How to run one of our CLIs (kg, kgctl) from wherever this module runs: bin/ (dist/) when the
 * lab runs built, and from src/ (the tests) too when dist/ was built after the last source
 * change (an agent started through tsx takes seconds longer, which a 2-core machine running a
 * dozen of them feels); else the sources through tsx. Always under the environment and node flags
 * of the CLI's `#!` line, as the image runs it: bin/kg's set glibc's malloc and tune the heap, and
 * kg's code cache is trained under the flags (docs/performance.md#the-heap).
 */
export function cliArgv(cli: 'kg' | 'kgctl'): string[] {
  const bin = join(repository, 'bin', cli);
  if (!fromSource) return nodeCommand(bin);
  // kg's script holds the lab too (`kg lab`).
  const sources = [join(repository, 'src'), join(repository, 'packages', 'lab', 'src')];
  if (mtimeOf(join(repository, 'dist', 'cli', `${cli}.js`)) >= Math.max(...sources.map(newestMtime)))
    return nodeCommand(bin);
  const entry = join(repository, 'src', 'cli', `${cli}.ts`);
  return nodeCommand(bin, [
    '--import',
    import.meta.resolve('tsx'),
    '-e',
    `import(${JSON.stringify(entry)}).then((m) => m.main(process.argv.slice(1)))`,
    '--',
  ]);
}

function mtimeOf(path: string): number {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return 0;
  }
}

function newestMtime(dir: string): number {
  return readdirSync(dir, { withFileTypes: true }).reduce(
    (m, e) => Math.max(m, e.isDirectory() ? newestMtime(join(dir, e.name)) : mtimeOf(join(dir, e.name))),
    0,
  );
}

/**
 * Starts a long-running process detached (its own session, output to `logFile`) so it outlives
 * the command that started it, and records its PID before returning.
 */
export function startRecorded(state: StateDir, what: string, argv: readonly string[], logFile: string): number {
  const fd = openSync(logFile, 'a', 0o600);
  try {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', fd, fd], detached: true });
    child.unref();
    if (child.pid === undefined) throw new Error(`cannot start ${what}: ${argv[0]} did not start`);
    const start = processStart(child.pid);
    if (start === null) throw new Error(`${what} (${argv.join(' ')}) exited at once; see ${logFile}`);
    state.record({ kind: 'process', pid: child.pid, start, what });
    return child.pid;
  } finally {
    closeSync(fd);
  }
}

/** Signals a recorded process if it is still ours; resolves once it is gone (SIGKILL after `graceMs`). */
export async function stopProcess(
  p: { pid: number; start: string },
  signal: NodeJS.Signals = 'SIGTERM',
  graceMs = 5000,
): Promise<void> {
  if (!isAlive(p)) return;
  try {
    process.kill(p.pid, signal);
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (isAlive(p)) {
    if (Date.now() > deadline) {
      try {
        process.kill(p.pid, 'SIGKILL');
      } catch {
        return;
      }
    }
    await sleep(20);
  }
}

/**
 * Kills every process inside one of our namespaces (wireguard-go started by an agent, a ping or
 * capture a test left): the namespace is ours, so is whatever runs in it.
 */
export async function killNamespaceProcesses(ns: string): Promise<void> {
  const pids = run(['ip', 'netns', 'pids', ns], { allowFail: true })
    .split('\n')
    .map((l) => Number(l.trim()))
    .filter((n) => Number.isInteger(n) && n > 1 && n !== process.pid);
  const procs = pids
    .map((pid) => ({ pid, start: processStart(pid) }))
    .filter((p): p is { pid: number; start: string } => p.start !== null);
  await Promise.all(procs.map((p) => stopProcess(p, 'SIGKILL', 2000)));
}
