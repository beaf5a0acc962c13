import type { FaultKind } from './schedule.js';

/** One fault as it happened. */
export interface FaultRecord {
  kind: FaultKind;
  what: string;
  start: number;
  /** When the fault itself was over (the convergence window opens). */
  end: number;
  /** When every pair replied again after `end`, or null if not within the window. */
  recovered: number | null;
  /** Longest run of lost pings of any pair, from the fault's start to its recovery (ms). */
  outageMs: number;
  violations: string[];
}

const quantile = (xs: number[], q: number) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};
const secs = (ms: number) => (Number.isNaN(ms) ? '-' : (ms / 1000).toFixed(1));

/** A row per fault kind: count, outage p50/max, recovery after the fault p50/max, violations. */
export function faultTable(
  records: readonly FaultRecord[],
  extra: readonly { kind: string; violations: number }[],
): string {
  const kinds = [...new Set(records.map((r) => r.kind))].sort();
  const rows = kinds.map((k) => {
    const rs = records.filter((r) => r.kind === k);
    const outage = rs.map((r) => r.outageMs);
    const rec = rs.filter((r) => r.recovered !== null).map((r) => r.recovered! - r.end);
    return [
      k,
      String(rs.length),
      secs(quantile(outage, 0.5)),
      secs(Math.max(...outage)),
      secs(quantile(rec, 0.5)),
      secs(rec.length ? Math.max(...rec) : NaN),
      String(rs.reduce((n, r) => n + r.violations.length, 0)),
    ];
  });
  for (const e of extra) rows.push([e.kind, '-', '-', '-', '-', '-', String(e.violations)]);
  const head = ['fault', 'count', 'outage p50 s', 'outage max s', 'recovery p50 s', 'recovery max s', 'violations'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}
