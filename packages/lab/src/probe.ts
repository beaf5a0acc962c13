import { spawn, type ChildProcess } from 'node:child_process';
import { inNs, runAsync } from './sh.js';

/** Runs async jobs with at most `limit` at a time (pings of a large matrix would swamp 2 cores). */
export async function limited<T>(jobs: (() => Promise<T>)[], limit = 12): Promise<T[]> {
  const out: T[] = new Array<T>(jobs.length);
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const i = next++;
      out[i] = await jobs[i]!();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, jobs.length) }, worker));
  return out;
}

/** One ping from a namespace; true when a reply came back within `waitSeconds`. */
export async function ping(
  ns: string,
  dst: string,
  o: { count?: number; waitSeconds?: number; source?: string } = {},
): Promise<boolean> {
  const argv = ['ping', '-n', '-q', '-c', String(o.count ?? 1), '-W', String(o.waitSeconds ?? 1)];
  if (o.source) argv.push('-I', o.source);
  // -c N with -W waits for all N; a reply to any one is enough to say the path works.
  const r = await runAsync(inNs(ns, [...argv, dst]), 30_000);
  return r.code === 0 || /\b[1-9]\d* received/.test(r.stdout);
}

export interface Endpoint {
  /** Label in the matrix (a node name, or "peer"). */
  name: string;
  /** Namespace to ping from. */
  ns: string;
  /** Address to ping. */
  ip: string;
  /** Source address to ping from (the Peer's allowed IP), or none. */
  source?: string;
  /** The family of `ip` (a lab of both families probes each apart). */
  family?: 4 | 6;
}

export type Matrix = { from: string; to: string; ok: boolean }[];

export type Pair = { s: Endpoint; d: Endpoint };

/** Every source with every destination but itself. */
export const allPairs = (sources: readonly Endpoint[], destinations: readonly Endpoint[]): Pair[] =>
  sources.flatMap((s) => destinations.filter((d) => d.name !== s.name).map((d) => ({ s, d })));

/** One ping per pair, a dozen at a time. */
export async function pingPairs(pairs: readonly Pair[], o: { waitSeconds?: number } = {}): Promise<Matrix> {
  const results = await limited(
    pairs.map(
      ({ s, d }) =>
        () =>
          ping(s.ns, d.ip, { waitSeconds: o.waitSeconds ?? 1, ...(s.source ? { source: s.source } : {}) }),
    ),
  );
  return pairs.map(({ s, d }, i) => ({ from: s.name, to: d.name, ok: results[i]! }));
}

/** The matrix as a table: a row per source, a column per destination, ✓ or ✗. */
export function formatMatrix(m: Matrix): string {
  const rows = [...new Set(m.map((e) => e.from))];
  const targets = new Set(m.map((e) => e.to));
  // Columns in the rows' order (a source never pings itself, so the first row alone would skew it).
  const cols = [...new Set([...rows, ...targets])].filter((c) => targets.has(c));
  const width = Math.max(4, ...rows.map((r) => r.length), ...cols.map((c) => c.length));
  const pad = (s: string) => s.padEnd(width);
  const lines = [`${pad('from\\to')} ${cols.map(pad).join(' ')}`];
  for (const r of rows) {
    // '-': not probed (itself, or the other family's address of a dual-stack pod).
    const cell = (c: string) => {
      const e = m.find((x) => x.from === r && x.to === c);
      return e === undefined ? '-' : e.ok ? 'ok' : 'FAIL';
    };
    const cells = cols.map(cell);
    lines.push(`${pad(r)} ${cells.map(pad).join(' ')}`);
  }
  return lines.join('\n');
}

export const allOk = (m: Matrix) => m.every((e) => e.ok);

/**
 * Pings every pair continuously (every 0.2 s) until each has had a reply or `timeoutMs` passed;
 * returns when each pair first got a reply (ms since the epoch, from ping's own timestamps), or
 * null. Continuous pings measure convergence to a fraction of a second, where rounds of single
 * pings on a loaded machine would not. `tick` is called every `everyMs` with the replies so far.
 */
export async function firstReplies(
  pairs: readonly Pair[],
  timeoutMs: number,
  tick?: { everyMs: number; call: (first: readonly (number | null)[]) => void },
): Promise<(number | null)[]> {
  const first: (number | null)[] = pairs.map(() => null);
  let left = pairs.length;
  let finish: () => void = () => {};
  const done = new Promise<void>((resolve) => (finish = resolve));
  let over = false;
  const children = new Set<ChildProcess>();
  const watch = ({ s, d }: Pair, i: number): void => {
    const argv = inNs(s.ns, ['ping', '-n', '-D', '-i', '0.2', ...(s.source ? ['-I', s.source] : []), d.ip]);
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'ignore'] });
    children.add(child);
    let buffered = '';
    child.stdout.on('data', (chunk: Buffer) => {
      if (first[i] !== null) return;
      buffered += chunk.toString('utf8');
      const m = /^\[(\d+\.\d+)\] \d+ bytes from/m.exec(buffered);
      if (!m) return;
      first[i] = Math.round(Number(m[1]) * 1000);
      child.kill('SIGKILL');
      if (--left === 0) finish();
    });
    child.on('close', () => {
      children.delete(child);
      // ping gives up at once when there is no route yet ("connect: Network is unreachable").
      if (first[i] === null && !over) setTimeout(() => !over && watch({ s, d }, i), 200);
    });
  };
  pairs.forEach(watch);
  const timer = setTimeout(finish, timeoutMs);
  const ticker = tick && setInterval(() => tick.call(first), tick.everyMs);
  if (pairs.length === 0) finish();
  try {
    await done;
  } finally {
    over = true;
    clearTimeout(timer);
    if (ticker) clearInterval(ticker);
    for (const c of children) c.kill('SIGKILL');
  }
  return first;
}
