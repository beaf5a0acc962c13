import type { ChildProcess } from 'node:child_process';

/**
 * The command helper's process (spawner.ts speaks to it): its script and how it is started, in a
 * file of their own so that kg's start (src/cli/kg-start.ts) can start it before kg's bundle is
 * even loaded, and the bundle's Spawner takes that process over. Node's own start-up takes the
 * helper ~60-80 ms; started first, it overlaps kg's loading on the other core instead of
 * delaying the first command (kg apply's reads taken ahead) by as much.
 *
 * The two are separate bundles, each with its own copy of this file: the process crosses from one
 * to the other under a global symbol, `Symbol.for('kilo-ts.command-helper')`, and only the
 * ChildProcess (Node's own class) does, so that HelperLost and the rest stay the bundle's.
 * node:child_process is loaded on the first spawn: `kg --version` loads none of it.
 */

// Plain JavaScript run with `node -e`: no module resolution, no loader flags from the parent.
const script = `
const { spawn } = require('node:child_process');
process.on('disconnect', () => process.exit(0));
process.on('message', (m) => {
  let done = false;
  const reply = (code, stdout, stderr) => { if (!done) { done = true; process.send({ id: m.id, code, stdout, stderr }); } };
  let c;
  try {
    c = spawn(m.file, m.args, { stdio: ['pipe', 'pipe', 'pipe'], timeout: m.timeoutMs });
  } catch (e) {
    return reply(null, '', String(e && e.message));
  }
  const out = [], err = [];
  c.stdout.on('data', (d) => out.push(d));
  c.stderr.on('data', (d) => err.push(d));
  c.on('error', (e) => reply(null, '', e.message));
  c.on('close', (code) => reply(code, Buffer.concat(out).toString('utf8'), Buffer.concat(err).toString('utf8')));
  c.stdin.on('error', () => {});
  c.stdin.end(m.input);
});
`;

/** The channel of a ChildProcess, which Node's types leave out of ref/unref. */
export function channelOf(child: ChildProcess): { ref(): void; unref(): void } | undefined {
  return child.channel as { ref(): void; unref(): void } | undefined;
}

/**
 * A new helper process, unref'd with its channel: idle, it keeps no one alive (the Spawner refs
 * the channel while requests are out). It exits when this process does (its channel closes).
 */
export function spawnHelper(): ChildProcess {
  // spawn (not fork): the parent's loader flags (tsx in tests) must not reach the helper.
  // Structured clone, not JSON: a megabyte of `ip -j` output crosses without escaping every quote
  // (about 10 ms less per megabyte, measured).
  const child = process.getBuiltinModule('node:child_process').spawn(process.execPath, ['-e', script], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    serialization: 'advanced',
  });
  child.unref();
  channelOf(child)?.unref();
  return child;
}

const early = Symbol.for('kilo-ts.command-helper');
const slot = globalThis as { [early]?: ChildProcess };

/** Starts the helper now, for the first Spawner of this process to take over (takeEarlyHelper). */
export function startHelperEarly(): void {
  if (slot[early]) return;
  const child = spawnHelper();
  // Until it is taken over nobody else listens: a failed spawn must not be an uncaught 'error'.
  child.on('error', () => {});
  slot[early] = child;
}

/**
 * The helper startHelperEarly started, once, if it is still there to take: what already happened
 * to it shows in its state (Node sets it before the event), what has not happens to its new owner.
 * A dead one is dropped (no request ever reached it).
 */
export function takeEarlyHelper(): ChildProcess | undefined {
  const child = slot[early];
  delete slot[early];
  if (child?.pid === undefined || !child.connected || child.exitCode !== null || child.signalCode !== null)
    return undefined;
  return child;
}
