import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';

/** A lab command that failed: names the command and what it printed. */
export class LabCommandError extends Error {
  constructor(
    readonly argv: readonly string[],
    readonly code: number | null,
    readonly output: string,
  ) {
    super(`${argv.join(' ')} exited with ${code}: ${output.trim().split('\n').slice(-3).join(' | ')}`);
    this.name = 'LabCommandError';
  }
}

/** Runs a command to completion; returns stdout, throws LabCommandError on failure. */
export function run(argv: readonly string[], opts: { input?: string; allowFail?: boolean } = {}): string {
  const r = spawnSync(argv[0]!, argv.slice(1), { input: opts.input ?? '', encoding: 'utf8', timeout: 60_000 });
  if (r.error) throw new LabCommandError(argv, null, r.error.message);
  if (r.status !== 0 && !opts.allowFail) throw new LabCommandError(argv, r.status, `${r.stderr}${r.stdout}`);
  return r.stdout;
}

/** The same, asynchronously, resolving to exit code and output (never rejects on a non-zero exit). */
export function runAsync(
  argv: readonly string[],
  timeoutMs = 30_000,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      argv[0]!,
      argv.slice(1),
      { encoding: 'utf8', timeout: timeoutMs, maxBuffer: 1 << 24 },
      (err, stdout, stderr) => {
        const code = err
          ? typeof (err as { code?: unknown }).code === 'number'
            ? (err as { code: number }).code
            : -1
          : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** `ip netns exec NS argv…` */
export const inNs = (ns: string, argv: readonly string[]): string[] => ['ip', 'netns', 'exec', ns, ...argv];

/** `ip netns exec NS` with RUNDIR bound over /var/run/wireguard, as the agents see it. */
export const inNodeNs = (ns: string, runDir: string, argv: readonly string[]): string[] => [
  'ip',
  'netns',
  'exec',
  ns,
  'sh',
  '-c',
  'mount --bind "$0" /var/run/wireguard && exec "$@"',
  runDir,
  ...argv,
];

/** Runs `ip -batch -` inside a namespace (one process for many changes). */
export function ipBatch(ns: string, lines: readonly string[]): void {
  if (lines.length > 0) run(['ip', '-n', ns, '-batch', '-'], { input: `${lines.join('\n')}\n` });
}

/** Sets sysctls inside a namespace through /proc/sys (which shows the writer's namespace): no procps needed. */
export function sysctl(ns: string, settings: Record<string, string | number>): void {
  const script = Object.entries(settings)
    .map(([k, v]) => `echo ${v} > /proc/sys/${k.replaceAll('.', '/')}`)
    .join(' && ');
  run(inNs(ns, ['sh', '-c', script]));
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Starts a long-running command (a ping that runs until stopped) and hands each complete line of
 * its standard output to `onLine` as it comes; the caller owns the process and stops it by PID.
 */
export function spawnLines(argv: readonly string[], onLine: (line: string) => void): ChildProcess {
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'ignore'] });
  let buffered = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) onLine(line);
  });
  return child;
}
