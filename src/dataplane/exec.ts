import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { HelperLost, spawnViaHelper, startHelper, type SpawnResult } from './spawner.js';

export interface RunOptions {
  input?: string;
  timeoutMs?: number;
}

export interface ExecResult {
  stdout: string;
  stderr: string;
}

/** A command that failed; names the command and what it printed. */
export class ExecError extends Error {
  constructor(
    readonly argv: readonly string[],
    readonly code: number | null,
    readonly stdout: string,
    readonly stderr: string,
  ) {
    super(`${argv.join(' ')} exited with ${code}: ${stderr.trim() || stdout.trim()}`);
    this.name = 'ExecError';
  }
}

/**
 * The command helper died while the command ran: it may have applied wholly, in part or not at all,
 * and it is not run again (an `iptables -I` batch would apply twice). The reconcile step fails and
 * the next pass reads the machine instead of trusting what this one meant to write.
 */
export class ExecInterrupted extends ExecError {
  constructor(argv: readonly string[], why: string) {
    super(argv, null, '', `${why} while the command ran; not run again, its effect is unknown`);
    this.message = `${argv.join(' ')}: ${this.stderr}`;
    this.name = 'ExecInterrupted';
  }
}

/**
 * Runs commands on a machine: the host, or a network namespace in tests and the lab. Every
 * dataplane program (ip, wg, iptables-restore, wireguard-go) goes through one of these.
 */
export interface Exec {
  /** Runs to completion; rejects with ExecError on a non-zero exit. */
  run(argv: readonly string[], opts?: RunOptions): Promise<ExecResult>;
  /**
   * Starts a long-running process (wireguard-go -f); the caller owns and stops it by PID. With
   * `logFile` its output goes to that file and it is detached: it outlives this process (an
   * agent stopped with --clean-up=false, or killed, leaves its tunnel up), yet the caller still
   * sees its exit while alive.
   */
  start(argv: readonly string[], opts?: { logFile?: string }): ChildProcess;
  /** Where wireguard-go's UAPI sockets are visible from this process. */
  readonly wireGuardRunDir: string;
}

async function runWith(
  prefix: readonly string[],
  argv: readonly string[],
  opts: { input?: string; timeoutMs?: number } = {},
): Promise<ExecResult> {
  const full = [...prefix, ...argv];
  let r: SpawnResult;
  try {
    r = await spawnViaHelper(full[0]!, full.slice(1), opts.input ?? '', opts.timeoutMs ?? 30_000);
  } catch (e) {
    // The helper is restarted on the next call. A command it never received runs directly now; one
    // it may have run is not repeated.
    if (!(e instanceof HelperLost)) throw e;
    if (e.mayHaveRun) throw new ExecInterrupted(argv, e.message);
    r = await spawnDirect(full, opts);
  }
  if (r.code === 0) return { stdout: r.stdout, stderr: r.stderr };
  throw new ExecError(argv, r.code, r.stdout, r.stderr);
}

function spawnDirect(full: readonly string[], opts: { input?: string; timeoutMs?: number }): Promise<SpawnResult> {
  return new Promise((resolve) => {
    const child = spawn(full[0]!, full.slice(1), {
      stdio: ['pipe', 'pipe', 'pipe'],
      timeout: opts.timeoutMs ?? 30_000,
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let done = false;
    const finish = (r: SpawnResult) => {
      if (done) return;
      done = true;
      resolve(r);
    };
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => err.push(d));
    child.on('error', (e) => finish({ code: null, stdout: '', stderr: e.message }));
    child.on('close', (code) =>
      finish({ code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') }),
    );
    child.stdin.on('error', () => {});
    child.stdin.end(opts.input ?? '');
  });
}

function startWith(prefix: readonly string[], argv: readonly string[], opts: { logFile?: string } = {}): ChildProcess {
  const full = [...prefix, ...argv];
  if (!opts.logFile) return spawn(full[0]!, full.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  const fd = openSync(opts.logFile, 'a', 0o600);
  try {
    const child = spawn(full[0]!, full.slice(1), { stdio: ['ignore', fd, fd], detached: true });
    child.unref();
    return child;
  } finally {
    closeSync(fd);
  }
}

/** The host's Exec; its command helper starts at once (every caller runs commands soon). */
export function hostExec(): Exec {
  startHelper();
  return {
    run: (argv, opts) => runWith([], argv, opts),
    start: (argv, opts) => startWith([], argv, opts),
    wireGuardRunDir: '/var/run/wireguard',
  };
}

/**
 * Runs inside network namespace `ns`. wireguard-go's socket path is shared by all namespaces,
 * so for `wg` and started processes (wireguard-go) `runDir` is bind-mounted over /var/run/wireguard in the command's
 * private mount namespace (see ../shared/notes/dataplane-lab.md); the mount never leaks to the
 * host. Everything else (ip, iptables) only needs the network namespace: `nsenter --net` is one
 * process where the mount takes four, which is most of what a small change costs in a namespace.
 */
export function netnsExec(ns: string, runDir: string): Exec {
  const withRunDir = [
    'ip',
    'netns',
    'exec',
    ns,
    'sh',
    '-c',
    'mkdir -p /var/run/wireguard && mount --bind "$0" /var/run/wireguard && exec "$@"',
    runDir,
  ];
  const netOnly = ['nsenter', `--net=/var/run/netns/${ns}`];
  return {
    run: (argv, opts) => runWith(argv[0] === 'wg' ? withRunDir : netOnly, argv, opts),
    // Long-running processes (wireguard-go, whatever its path) always get the socket directory.
    start: (argv, opts) => startWith(withRunDir, argv, opts),
    wireGuardRunDir: runDir,
  };
}
