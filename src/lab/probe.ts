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
export async function ping(ns: string, dst: string, o: { count?: number; waitSeconds?: number; source?: string } = {}): Promise<boolean> {
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
}

export type Matrix = { from: string; to: string; ok: boolean }[];

/** Pings every destination from every source (except itself). */
export async function pingMatrix(sources: readonly Endpoint[], destinations: readonly Endpoint[], o: { waitSeconds?: number } = {}): Promise<Matrix> {
  const pairs = sources.flatMap((s) => destinations.filter((d) => d.name !== s.name).map((d) => ({ s, d })));
  const results = await limited(pairs.map(({ s, d }) => () => ping(s.ns, d.ip, { waitSeconds: o.waitSeconds ?? 1, ...(s.source ? { source: s.source } : {}) })));
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
    const cells = cols.map((c) => (r === c ? '-' : m.find((e) => e.from === r && e.to === c)?.ok ? 'ok' : 'FAIL'));
    lines.push(`${pad(r)} ${cells.map(pad).join(' ')}`);
  }
  return lines.join('\n');
}

export const allOk = (m: Matrix) => m.every((e) => e.ok);
