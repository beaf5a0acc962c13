import type { ChildProcess } from 'node:child_process';

/**
 * The command helper (spawner.ts speaks to it): a POSIX shell, `sh -s DIR`, that reads one line per
 * command on its standard input, starts the command in the background with its input, output and
 * errors in files of DIR (private, removed when the shell exits), and answers on its standard
 * output with the command's PID, then its exit status.
 *
 * A shell, because a command's start is mostly the fork that starts it: docs/performance.md#the-command-helper.
 *
 * In a file of its own so that kg's start (src/cli/kg-start.ts) can start it before kg's bundle is
 * even loaded, and the bundle's Spawner takes that process over. The two are separate bundles, each
 * with its own copy of this file: the helper crosses from one to the other under a global symbol,
 * `Symbol.for('kilo-ts.command-helper')`, as a plain object holding Node's own ChildProcess, so
 * that HelperLost and the rest stay the bundle's. node:child_process is loaded on the first spawn:
 * `kg --version` loads none of it.
 */

export interface Helper {
  child: ChildProcess;
  /** Where each command's input, output and errors live while it runs (mode 0700). */
  dir: string;
}

/**
 * A new helper. Its standard streams are unref'd: idle, it keeps no one alive (the Spawner refs its
 * output while requests are out). At the end of its input (this process exited, however) the shell
 * exits and removes its directory.
 */
export function spawnHelper(): Helper {
  const fs = process.getBuiltinModule('node:fs');
  const path = process.getBuiltinModule('node:path');
  const dir = fs.mkdtempSync(path.join(process.getBuiltinModule('node:os').tmpdir(), 'kilo-helper-'));
  const child = process.getBuiltinModule('node:child_process').spawn('/bin/sh', ['-s', dir], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  // Until it is taken over nobody else listens: a failed spawn must not be an uncaught 'error'. A
  // shell that never started removes nothing: its directory goes here.
  child.on('error', () => fs.rmSync(dir, { recursive: true, force: true }));
  child.stdin.on('error', () => {});
  // The trap's quotes keep a directory name with spaces whole; the rest of what the shell reads is
  // written by the Spawner.
  child.stdin.write(`trap 'rm -rf "$1"' EXIT\n`);
  child.unref();
  unrefStreams(child);
  return { child, dir };
}

/** The helper's pipes, which Node's types leave out of ref/unref. */
function pipes(child: ChildProcess): { ref(): void; unref(): void }[] {
  return [child.stdin, child.stdout].filter((s) => s !== null) as unknown as { ref(): void; unref(): void }[];
}

export function refStreams(child: ChildProcess): void {
  for (const p of pipes(child)) p.ref();
}

export function unrefStreams(child: ChildProcess): void {
  for (const p of pipes(child)) p.unref();
}

const early = Symbol.for('kilo-ts.command-helper');
const slot = globalThis as { [early]?: Helper };

/** Starts the helper now, for the first Spawner of this process to take over (takeEarlyHelper). */
export function startHelperEarly(): void {
  if (slot[early]) return;
  slot[early] = spawnHelper();
}

/**
 * The helper startHelperEarly started, once, if it is still there to take: what already happened
 * to it shows in its state (Node sets it before the event), what has not happens to its new owner.
 * A dead one is dropped (no request ever reached it).
 */
export function takeEarlyHelper(): Helper | undefined {
  const helper = slot[early];
  delete slot[early];
  const child = helper?.child;
  if (child?.pid === undefined || child.exitCode !== null || child.signalCode !== null || !child.stdin?.writable) {
    // A shell killed outright never ran its trap.
    if (helper) process.getBuiltinModule('node:fs').rmSync(helper.dir, { recursive: true, force: true });
    return undefined;
  }
  return helper;
}
