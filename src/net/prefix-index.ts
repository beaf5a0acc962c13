import { toBigInt } from './aggregate.js';
import { Cidr, type Family } from './cidr.js';

interface Entry {
  start: bigint;
  rank: number;
}

interface FamilyIndex {
  /** The highest rank per exact prefix (its network text). */
  exact: Map<string, number>;
  /** The prefix lengths present, for the look-up of a query's ancestors. */
  lengths: number[];
  /** Entries by network address; `table[k][i]` is the highest rank of entries i … i + 2^k - 1. */
  sorted: Entry[];
  table: Int32Array[];
}

const width = (family: Family) => (family === 4 ? 32 : 128);

/**
 * Which of many prefixes overlap a given one, without a scan: two prefixes overlap only when one
 * contains the other, so the entries overlapping `c` are its ancestors (one exact look-up per
 * prefix length present) and the entries whose network address lies inside `c` (a range of the
 * entries sorted by address, its highest rank from a sparse table). Building is O(n log n), a
 * query O(log n + lengths). Each entry carries a rank (a non-negative integer); a query answers
 * the highest rank among the entries overlapping it.
 */
export class PrefixIndex {
  private readonly families = new Map<Family, FamilyIndex>();

  constructor(entries: Iterable<{ cidr: Cidr; rank: number }>) {
    const byFamily = new Map<Family, { cidr: Cidr; rank: number }[]>();
    for (const e of entries) {
      const list = byFamily.get(e.cidr.family) ?? [];
      list.push(e);
      byFamily.set(e.cidr.family, list);
    }
    for (const [family, list] of byFamily) {
      const exact = new Map<string, number>();
      const lengths = new Set<number>();
      const sorted: Entry[] = [];
      for (const { cidr, rank } of list) {
        exact.set(cidr.networkText, Math.max(rank, exact.get(cidr.networkText) ?? -1));
        lengths.add(cidr.prefix);
        sorted.push({ start: toBigInt(cidr.network.bytes), rank });
      }
      sorted.sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
      const table = [Int32Array.from(sorted, (e) => e.rank)];
      for (let k = 1; 1 << k <= sorted.length; k++) {
        const prev = table[k - 1]!;
        const next = new Int32Array(sorted.length - (1 << k) + 1);
        for (let i = 0; i < next.length; i++) next[i] = Math.max(prev[i]!, prev[i + (1 << (k - 1))]!);
        table.push(next);
      }
      this.families.set(family, { exact, lengths: [...lengths].sort((a, b) => a - b), sorted, table });
    }
  }

  /** The highest rank of the entries overlapping `c`, or -1 when none does. */
  maxRankOverlapping(c: Cidr): number {
    const f = this.families.get(c.family);
    if (!f) return -1;
    let best = -1;
    for (const length of f.lengths) {
      if (length > c.prefix) break;
      const rank = f.exact.get(Cidr.of(c.network, length).networkText);
      if (rank !== undefined && rank > best) best = rank;
    }
    const start = toBigInt(c.network.bytes);
    const end = start + (1n << BigInt(width(c.family) - c.prefix));
    const lo = lowerBound(f.sorted, start);
    const hi = lowerBound(f.sorted, end);
    if (lo < hi) {
      const k = 31 - Math.clz32(hi - lo);
      best = Math.max(best, f.table[k]![lo]!, f.table[k]![hi - (1 << k)]!);
    }
    return best;
  }

  overlapsAny(c: Cidr): boolean {
    return this.maxRankOverlapping(c) >= 0;
  }
}

/** The first index whose start is at least `value`. */
function lowerBound(sorted: readonly Entry[], value: bigint): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]!.start < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
