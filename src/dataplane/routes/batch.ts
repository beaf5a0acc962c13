import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExecError, type Exec, type RunOptions } from '../exec.js';

export interface BatchFailure {
  /** 0-based index into the lines given. */
  index: number;
  /** What iproute2 said about the line, e.g. "Error: Nexthop has invalid gateway." */
  message: string;
}

// `-` is standard input; a batch run from a file is named by its path.
const failedLine = /^Command failed (?:-|\/.+):(\d+)$/;

/**
 * Lines from which a batch is run from a file rather than fed on standard input: the command helper
 * gets the input over its channel, which this process writes only between its own stretches of CPU,
 * and a first apply's half of 10,000 routes was seen reaching ip 27 ms after the other half.
 */
export const fileFrom = 1000;

export interface BatchResult {
  /**
   * Lines that did not take effect. When iproute2 gives up without naming a line (it exits on an
   * argument it cannot parse), every line after the last one it named is listed as unconfirmed.
   */
  failures: BatchFailure[];
}

/**
 * Runs `lines` in one `ip -force -batch` (from standard input, or a file from `fileFrom` lines) and
 * returns the lines that failed with iproute2's message.
 *
 * Plain `ip -batch` stops at the first failing line; `-force` goes on and reports every failure as
 * the kernel's message followed by `Command failed -:N`, so one process applies everything that can
 * be applied (rather than restarting a batch after each failure). Callers validate what goes into a
 * line so that an abort is a bug; it is reported, not guessed around: the next reconcile re-reads the
 * machine anyway.
 */
export async function runBatch(
  exec: Exec,
  lines: readonly string[],
  options: readonly string[] = [],
  runOptions: Pick<RunOptions, 'keepsRoutes'> = {},
): Promise<BatchResult> {
  if (lines.length === 0) return { failures: [] };
  const text = `${lines.join('\n')}\n`;
  // Not secret (routes and rules), but the directory is private and removed whatever happens.
  const dir = lines.length >= fileFrom ? mkdtempSync(join(tmpdir(), 'kilo-batch-')) : null;
  try {
    if (dir) {
      const file = join(dir, 'batch');
      writeFileSync(file, text);
      await exec.run(['ip', ...options, '-force', '-batch', file], { ...runOptions, timeoutMs: 120_000 });
    } else
      await exec.run(['ip', ...options, '-force', '-batch', '-'], { ...runOptions, input: text, timeoutMs: 120_000 });
    return { failures: [] };
  } catch (e) {
    if (!(e instanceof ExecError)) throw e;
    const failures = parseFailures(e.stderr);
    if (e.code === 1 && failures.length > 0) return { failures };
    const said =
      e.stderr
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l && !failedLine.test(l))
        .pop() ?? `exit code ${e.code}`;
    const from = Math.max(-1, ...failures.map((f) => f.index)) + 1;
    for (let index = from; index < lines.length; index++)
      failures.push({ index, message: `not confirmed, ip -batch gave up: ${said}` });
    return { failures };
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

/** Pairs each `Command failed -:N` with the message lines printed since the previous one. */
export function parseFailures(stderr: string): BatchFailure[] {
  const out: BatchFailure[] = [];
  let pending: string[] = [];
  for (const raw of stderr.split('\n')) {
    const line = raw.trim();
    if (!line) continue;
    const m = failedLine.exec(line);
    if (m) {
      out.push({ index: Number(m[1]) - 1, message: pending.join(' ').replace(/\.$/, '') || 'failed' });
      pending = [];
    } else {
      pending.push(line.replace(/^(Error: |RTNETLINK answers: )/, ''));
    }
  }
  return out;
}
