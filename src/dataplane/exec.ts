import { spawn, type ChildProcess } from 'node:child_process';

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
 * Runs commands on a machine: the host, or a network namespace in tests and the lab. Every
 * dataplane program (ip, wg, iptables-restore, wireguard-go) goes through one of these.
 */
export interface Exec {
  /** Runs to completion; rejects with ExecError on a non-zero exit. */
  run(argv: readonly string[], opts?: { input?: string; timeoutMs?: number }): Promise<ExecResult>;
  /** Starts a long-running process (wireguard-go -f); the caller owns and stops it by PID. */
  start(argv: readonly string[]): ChildProcess;
  /** Where wireguard-go's UAPI sockets are visible from this process. */
  readonly wireGuardRunDir: string;
}

function runWith(prefix: readonly string[], argv: readonly string[], opts: { input?: string; timeoutMs?: number } = {}): Promise<ExecResult> {
  const full = [...prefix, ...argv];
  return new Promise((resolve, reject) => {
    const child = spawn(full[0]!, full.slice(1), { stdio: ['pipe', 'pipe', 'pipe'], timeout: opts.timeoutMs ?? 30_000 });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => err.push(d));
    child.on('error', (e) => reject(new ExecError(argv, null, '', e.message)));
    child.on('close', (code) => {
      const stdout = Buffer.concat(out).toString('utf8');
      const stderr = Buffer.concat(err).toString('utf8');
      if (code === 0) resolve({ stdout, stderr });
      else reject(new ExecError(argv, code, stdout, stderr));
    });
    child.stdin.on('error', () => {});
    child.stdin.end(opts.input ?? '');
  });
}

export function hostExec(): Exec {
  return {
    run: (argv, opts) => runWith([], argv, opts),
    start: (argv) => spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] }),
    wireGuardRunDir: '/var/run/wireguard',
  };
}

/**
 * Runs inside network namespace `ns`. wireguard-go's socket path is shared by all namespaces,
 * so `runDir` is bind-mounted over /var/run/wireguard in the command's private mount namespace
 * (see ../shared/notes/dataplane-lab.md); the mount never leaks to the host.
 */
export function netnsExec(ns: string, runDir: string): Exec {
  const prefix = ['ip', 'netns', 'exec', ns, 'sh', '-c', 'mount --bind "$0" /var/run/wireguard && exec "$@"', runDir];
  return {
    run: (argv, opts) => runWith(prefix, argv, opts),
    start: (argv) => spawn(prefix[0]!, [...prefix.slice(1), ...argv], { stdio: ['ignore', 'pipe', 'pipe'] }),
    wireGuardRunDir: runDir,
  };
}
