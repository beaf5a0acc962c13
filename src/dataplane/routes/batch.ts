import { ExecError, type Exec } from '../exec.js';

export interface BatchFailure {
  /** 0-based index into the lines given. */
  index: number;
  /** What iproute2 said about the line, e.g. "Error: Nexthop has invalid gateway." */
  message: string;
}

// `-`: the batch is read from standard input.
const failedLine = /^Command failed -:(\d+)$/;

export interface BatchResult {
  /**
   * Lines that did not take effect. When iproute2 gives up without naming a line (it exits on an
   * argument it cannot parse), every line after the last one it named is listed as unconfirmed.
   */
  failures: BatchFailure[];
}

/**
 * Runs `lines` in one `ip -force -batch` from standard input (which the command helper hands the
 * program as a file it wrote at once: spawner.ts) and returns the lines that failed with iproute2's
 * message.
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
): Promise<BatchResult> {
  if (lines.length === 0) return { failures: [] };
  const text = `${lines.join('\n')}\n`;
  try {
    await exec.run(['ip', ...options, '-force', '-batch', '-'], { input: text, timeoutMs: 120_000 });
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
