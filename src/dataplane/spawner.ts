import type { ChildProcess } from 'node:child_process';
import { channelOf, spawnHelper, takeEarlyHelper } from './helper-process.js';

/**
 * Runs short commands from a small long-lived child process. Starting a process from the agent
 * means forking the agent, and with a big cluster in memory that fork alone holds the event loop
 * ≈ 13 ms (measured: a third of a one-node change). The helper's fork costs next to nothing.
 * It exits when its parent does (the IPC channel closes), so it never outlives the agent.
 */

export interface SpawnResult {
  /** null: no exit code (not started, or killed by a signal or the timeout). */
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The helper failed before answering. `mayHaveRun`: the request had reached it, so the command may
 * have run (wholly or in part); only when false is running it again elsewhere safe.
 */
export class HelperLost extends Error {
  constructor(
    message: string,
    readonly mayHaveRun: boolean,
  ) {
    super(message);
    this.name = 'HelperLost';
  }
}

interface Request {
  id: number;
  file: string;
  args: string[];
  input: string;
  timeoutMs: number;
}

class Spawner {
  private child: ChildProcess | null = null;
  private nextId = 0;
  private readonly pending = new Map<number, { resolve: (r: SpawnResult) => void; reject: (e: Error) => void }>();

  ensure(): ChildProcess {
    if (this.child) return this.child;
    // The one kg's start began before loading kg (helper-process.ts), else a new one.
    const child = takeEarlyHelper() ?? spawnHelper();
    child.on('message', (m: SpawnResult & { id: number }) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      this.idle();
      p.resolve({ code: m.code, stdout: m.stdout, stderr: m.stderr });
    });
    const gone = (why: string, mayHaveRun: boolean) => {
      if (this.child !== child) return;
      this.child = null;
      for (const p of this.pending.values()) p.reject(new HelperLost(`command helper ${why}`, mayHaveRun));
      this.pending.clear();
    };
    child.on('exit', (code, signal) => gone(`exited (${signal ?? code})`, true));
    // The helper is unref'd: when it dies, its closed channel may be all that still wakes this process.
    child.on('disconnect', () => gone('disconnected', true));
    // No pid: the helper never started, so nothing was delivered to it.
    child.on('error', (e) => gone(`failed: ${e.message}`, child.pid !== undefined));
    this.child = child;
    this.idle();
    return child;
  }

  /** The helper keeps this process alive only while it has requests out. */
  private idle(): void {
    const channel = this.child ? channelOf(this.child) : undefined;
    if (this.pending.size === 0) channel?.unref();
    else channel?.ref();
  }

  run(file: string, args: readonly string[], input: string, timeoutMs: number): Promise<SpawnResult> {
    const child = this.ensure();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.idle();
      const request: Request = { id, file, args: [...args], input, timeoutMs };
      child.send(request, (e) => {
        if (!e || !this.pending.has(id)) return;
        this.pending.delete(id);
        this.idle();
        reject(new HelperLost(`command helper unreachable: ${e.message}`, false));
      });
    });
  }
}

const shared = new Spawner();

/**
 * Starts the helper now, so that its start-up (a Node process: tens of milliseconds) overlaps the
 * caller's own work (reading and planning a cluster) instead of delaying its first command.
 */
export function startHelper(): void {
  shared.ensure();
}

/** Runs `file args` to completion through the helper; rejects (HelperLost) only when the helper itself fails. */
export function spawnViaHelper(
  file: string,
  args: readonly string[],
  input: string,
  timeoutMs: number,
): Promise<SpawnResult> {
  return shared.run(file, args, input, timeoutMs);
}
