import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { refStreams, spawnHelper, takeEarlyHelper, unrefStreams, type Helper } from './helper-process.js';

/**
 * Runs short commands through a long-lived shell (helper-process.ts): forking kg itself, a cluster
 * in memory, is costly per command (docs/performance.md#the-command-helper). It exits when its parent
 * does (its input closes), so it never outlives kg.
 *
 * What the shell reads per command (ID: a number; $1: the helper's directory):
 *
 *     { (exec 'file' 'arg' …) <"$1/ID.i" >"$1/ID.o" 2>"$1/ID.e" & echo "p ID $!"; wait $!; echo "ID $?"; } & echo "s ID $!"
 *
 * `exec` in a subshell runs the program itself (never a builtin of the same name) with the PID
 * that `p` reports (a timeout kills it by that PID); `s` is the job's own PID, which the shell
 * reaps (`wait`) once its status is in: a shell without job control keeps every finished
 * background job a zombie until it is waited for.
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

interface Pending {
  file: string;
  resolve: (r: SpawnResult) => void;
  reject: (e: Error) => void;
  /** The command's PID, once the shell said it. */
  pid?: number;
  /** The job's PID (the subshell that waits for the command), once the shell said it. */
  job?: number;
  /** The exit status, once the shell said it. */
  status?: number;
  /** Answered already (the timeout): what the shell still says only cleans up. */
  settled: boolean;
  timer?: NodeJS.Timeout;
}

/** One word for the shell, whatever it holds: single quotes, each quote in it closed and escaped. */
const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/** What dash says when `exec` cannot run a program: Node's spawn reports these as errors, not exits. */
const notRun = /^\S+: \d+: exec: .*: (not found|Permission denied)\n?$/;

/** Exit statuses of a command killed by signal N: 128 + N (Linux has 64 signals). */
const bySignal = (status: number) => status > 128 && status <= 128 + 64;

class Spawner {
  private helper: Helper | null = null;
  private nextId = 0;
  private readonly pending = new Map<number, Pending>();
  private partial = '';

  ensure(): Helper {
    if (this.helper) return this.helper;
    // The one kg's start began before loading kg (helper-process.ts), else a new one.
    const helper = takeEarlyHelper() ?? spawnHelper();
    const { child } = helper;
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (d: string) => {
      if (this.helper === helper) this.heard(d);
    });
    const gone = (why: string, mayHaveRun: boolean) => {
      if (this.helper !== helper) return;
      this.helper = null;
      this.partial = '';
      // A shell killed outright never ran its trap.
      rmSync(helper.dir, { recursive: true, force: true });
      for (const p of this.pending.values()) {
        clearTimeout(p.timer);
        if (!p.settled) p.reject(new HelperLost(`command helper ${why}`, mayHaveRun));
      }
      this.pending.clear();
    };
    child.on('exit', (code, signal) => gone(`exited (${signal ?? code})`, true));
    child.stdout!.on('close', () => gone('closed its output', true));
    // No pid: the helper never started, so nothing was delivered to it.
    child.on('error', (e) => gone(`failed: ${e.message}`, child.pid !== undefined));
    this.helper = helper;
    this.idle();
    return helper;
  }

  /** The helper keeps this process alive only while it has requests out. */
  private idle(): void {
    if (!this.helper) return;
    if ([...this.pending.values()].some((p) => !p.settled)) refStreams(this.helper.child);
    else unrefStreams(this.helper.child);
  }

  private heard(data: string): void {
    const lines = (this.partial + data).split('\n');
    this.partial = lines.pop()!;
    for (const line of lines) {
      const words = line.split(' ');
      if (words.length === 3) {
        const p = this.pending.get(Number(words[1]));
        if (!p) continue;
        if (words[0] === 'p') {
          p.pid = Number(words[2]);
          // Timed out before its PID was known.
          if (p.settled) this.kill(p.pid);
        } else p.job = Number(words[2]);
        this.maybeDone(Number(words[1]));
      } else if (words.length === 2) {
        const p = this.pending.get(Number(words[0]));
        if (!p) continue;
        p.status = Number(words[1]);
        this.maybeDone(Number(words[0]));
      }
    }
  }

  private kill(pid: number): void {
    try {
      // As Node's spawn does at its timeout.
      process.kill(pid, 'SIGTERM');
    } catch {
      // Gone already.
    }
  }

  private maybeDone(id: number): void {
    const p = this.pending.get(id);
    if (!p || p.status === undefined || p.job === undefined) return;
    this.pending.delete(id);
    clearTimeout(p.timer);
    // Reap the job (it exits right after its status).
    this.helper?.child.stdin!.write(`wait ${p.job}\n`);
    const { out, err } = this.take(id);
    this.idle();
    if (p.settled) return;
    const status = p.status;
    if ((status === 126 || status === 127) && out === '' && notRun.test(err)) {
      const code = status === 127 ? 'ENOENT' : 'EACCES';
      p.resolve({ code: null, stdout: '', stderr: `spawn ${p.file} ${code}` });
    } else p.resolve({ code: bySignal(status) ? null : status, stdout: out, stderr: err });
  }

  /** The command's output and errors, read and removed with its input. */
  private take(id: number): { out: string; err: string } {
    const dir = this.helper?.dir;
    if (!dir) return { out: '', err: '' };
    const read = (ext: string) => {
      const file = join(dir, `${id}.${ext}`);
      try {
        return readFileSync(file, 'utf8');
      } catch {
        return '';
      } finally {
        rmSync(file, { force: true });
      }
    };
    const [out, err] = [read('o'), read('e')];
    rmSync(join(dir, `${id}.i`), { force: true });
    return { out, err };
  }

  run(file: string, args: readonly string[], input: string, timeoutMs: number): Promise<SpawnResult> {
    // Node's spawn refuses these as arguments; the shell would cut the word short.
    if ([file, ...args].some((a) => a.includes('\0')))
      return Promise.resolve({ code: null, stdout: '', stderr: `spawn ${file}: an argument holds a NUL byte` });
    const helper = this.ensure();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const p: Pending = { file, resolve, reject, settled: false };
      // Private like the directory (the shell's files are made under its umask): input can be secret.
      if (input !== '') writeFileSync(join(helper.dir, `${id}.i`), input, { mode: 0o600 });
      const from = input !== '' ? `"$1/${id}.i"` : '/dev/null';
      const command = [file, ...args].map(quote).join(' ');
      const line = `{ (exec ${command}) <${from} >"$1/${id}.o" 2>"$1/${id}.e" & echo "p ${id} $!"; wait $!; echo "${id} $?"; } & echo "s ${id} $!"\n`;
      p.timer = setTimeout(() => {
        p.settled = true;
        if (p.pid !== undefined) this.kill(p.pid);
        const { out, err } = this.take(id);
        this.idle();
        resolve({ code: null, stdout: out, stderr: err });
      }, timeoutMs);
      this.pending.set(id, p);
      this.idle();
      helper.child.stdin!.write(line, (e) => {
        if (!e || !this.pending.has(id) || p.settled) return;
        this.pending.delete(id);
        clearTimeout(p.timer);
        this.idle();
        reject(new HelperLost(`command helper unreachable: ${e.message}`, false));
      });
    });
  }
}

const shared = new Spawner();

/**
 * Starts the helper now, so that its start-up overlaps the caller's own work (reading and planning a
 * cluster) instead of delaying its first command.
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
