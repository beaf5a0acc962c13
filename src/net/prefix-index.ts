import type { Cidr } from './cidr.js';
import { ipv4, ipv6, type AddressSpace } from './space.js';

interface Entry<N> {
  start: N;
  rank: number;
}

/** The entries of one family. */
class FamilyIndex<N extends number | bigint> {
  /** The highest rank per exact prefix (its key in the address space). */
  private readonly exact = new Map<number | string, number>();
  /** The prefix lengths present, for the look-up of a query's ancestors. */
  private readonly lengths: number[];
  /** Entries by network address; `table[k][i]` is the highest rank of entries i … i + 2^k - 1. */
  private readonly sorted: Entry<N>[] = [];
  private readonly table: Int32Array[];

  constructor(
    private readonly space: AddressSpace<N>,
    entries: readonly { cidr: Cidr; rank: number }[],
  ) {
    const lengths = new Set<number>();
    for (const { cidr, rank } of entries) {
      if (cidr.family !== space.family) continue;
      const start = space.start(cidr);
      const key = space.key(start, cidr.prefix);
      this.exact.set(key, Math.max(rank, this.exact.get(key) ?? -1));
      lengths.add(cidr.prefix);
      this.sorted.push({ start, rank });
    }
    this.lengths = [...lengths].sort((a, b) => a - b);
    this.sorted.sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
    this.table = [Int32Array.from(this.sorted, (e) => e.rank)];
    for (let k = 1; 1 << k <= this.sorted.length; k++) {
      const prev = this.table[k - 1]!;
      const next = new Int32Array(this.sorted.length - (1 << k) + 1);
      for (let i = 0; i < next.length; i++) next[i] = Math.max(prev[i]!, prev[i + (1 << (k - 1))]!);
      this.table.push(next);
    }
  }

  maxRankOverlapping(c: Cidr): number {
    let best = -1;
    const start = this.space.start(c);
    for (const length of this.lengths) {
      if (length > c.prefix) break;
      const rank = this.exact.get(this.space.key(start, length));
      if (rank !== undefined && rank > best) best = rank;
    }
    const lo = lowerBound(this.sorted, start);
    const hi = lowerBound(this.sorted, this.space.end(start, this.space.width - c.prefix));
    if (lo < hi) {
      const k = 31 - Math.clz32(hi - lo);
      best = Math.max(best, this.table[k]![lo]!, this.table[k]![hi - (1 << k)]!);
    }
    return best;
  }
}

/**
 * Which of many prefixes overlap a given one, without a scan: two prefixes overlap only when one
 * contains the other, so the entries overlapping `c` are its ancestors (one exact look-up per
 * prefix length present) and the entries whose network address lies inside `c` (a range of the
 * entries sorted by address, its highest rank from a sparse table). Building is O(n log n), a
 * query O(log n + lengths). Each entry carries a rank (a non-negative integer); a query answers
 * the highest rank among the entries overlapping it.
 */
export class PrefixIndex {
  private readonly v4: FamilyIndex<number>;
  private readonly v6: FamilyIndex<bigint>;

  constructor(entries: Iterable<{ cidr: Cidr; rank: number }>) {
    const list = [...entries];
    this.v4 = new FamilyIndex(ipv4, list);
    this.v6 = new FamilyIndex(ipv6, list);
  }

  /** The highest rank of the entries overlapping `c`, or -1 when none does. */
  maxRankOverlapping(c: Cidr): number {
    return c.family === 4 ? this.v4.maxRankOverlapping(c) : this.v6.maxRankOverlapping(c);
  }

  overlapsAny(c: Cidr): boolean {
    return this.maxRankOverlapping(c) >= 0;
  }
}

/** The first index whose start is at least `value`. */
function lowerBound<N extends number | bigint>(sorted: readonly Entry<N>[], value: N): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]!.start < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
