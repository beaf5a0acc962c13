import { Cidr, IP } from './cidr.js';
import { cidrOf6, covers6, minimal6, sorted6 } from './aggregate6.js';

/*
 * Aligned prefixes either nest or are disjoint, so after sorting (a container first) one pass drops
 * the contained ones, and a stack merges two sibling halves into their parent as soon as the right
 * half is complete; the parent may in turn complete a half one level up. IPv4 here, over numbers;
 * IPv6 in aggregate6.ts, over short strings.
 */

/**
 * The fewest prefixes covering exactly the addresses of `cidrs`: contained prefixes dropped, sibling
 * halves merged (10.42.0.0/24 + 10.42.1.0/24 = 10.42.0.0/23). IPv4 first, each family in address
 * order, so equal address sets give equal lists. Host bits of the inputs are ignored. With `outside`,
 * the inputs it covers wholly are left out first (as a filter of `cidrs` by `outside.covers` would).
 */
export function aggregate(cidrs: readonly Cidr[], outside?: PrefixSet): Cidr[] {
  const out: Cidr[] = [];
  const keys = sorted4(cidrs);
  const v4 = minimal4(keys, outside?.v4);
  for (let i = 0; i < v4.length; i += 2) out.push(Cidr.of(IP.fromV4(v4[i]!), 32 - v4[i + 1]!));
  // Most clusters are IPv4 only: nothing more to look at.
  if (keys.length === cidrs.length) return out;
  const v6 = minimal6(sorted6(cidrs), outside?.v6);
  for (let i = 0; i < v6.length; i++) out.push(cidrOf6(v6[i]!, cidrs));
  return out;
}

/** 2^bits, for bits 0 to 32. */
const pow2 = Array.from({ length: 33 }, (_, bits) => 2 ** bits);

/**
 * The IPv4 prefixes of `cidrs` as numbers sorted natively: start * 64 + length, the start unsigned
 * (below 2^38, exact), so a container comes before what it contains. No comparator, no object per
 * prefix: docs/performance.md#cold-code.
 */
function sorted4(cidrs: readonly Cidr[]): Float64Array {
  const keys = new Float64Array(cidrs.length);
  let n = 0;
  for (let i = 0; i < cidrs.length; i++) {
    const c = cidrs[i]!;
    if (c.family === 4) keys[n++] = (c.network.v4 >>> 0) * 64 + c.prefix;
  }
  return keys.subarray(0, n).sort();
}

/**
 * `minimal` for IPv4 over sorted4's keys, the blocks as a flat list: start (unsigned), host bits,
 * start, host bits, … Keys inside a block of `outside` (minimal4's own output) are skipped: both are
 * in address order, so one walk along `outside` finds the block that could hold each.
 */
function minimal4(keys: Float64Array, outside?: readonly number[]): number[] {
  const out: number[] = [];
  let o = 0;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const prefix = key % 64;
    const start = (key - prefix) / 64;
    const bits = 32 - prefix;
    if (outside) {
      while (o + 2 < outside.length && outside[o + 2]! <= start) o += 2;
      if (o < outside.length && within4(start, bits, outside[o]!, outside[o + 1]!)) continue;
    }
    let n = out.length;
    // Sorted with containers first, a block that overlaps the last one lies inside it.
    if (n > 0 && within4(start, bits, out[n - 2]!, out[n - 1]!)) continue;
    let topStart = start;
    let topBits = bits;
    // Two sibling halves make their parent, which may complete a half one level up.
    while (n > 0) {
      const leftStart = out[n - 2]!;
      const leftBits = out[n - 1]!;
      if (leftBits !== topBits || topBits === 32) break;
      if (leftStart + pow2[leftBits]! !== topStart || leftStart % pow2[leftBits + 1]! !== 0) break;
      out.length = n -= 2;
      topStart = leftStart;
      topBits = leftBits + 1;
    }
    out.push(topStart, topBits);
  }
  return out;
}

/** The range of `bits` host bits at `start` lies inside the one at `outerStart` (both aligned). */
const within4 = (start: number, bits: number, outerStart: number, outerBits: number) =>
  bits <= outerBits && start >= outerStart && start < outerStart + pow2[outerBits]!;

/** A set of addresses given as prefixes, answering whether a whole prefix lies inside it. */
export class PrefixSet {
  /** IPv4 blocks as minimal4 gives them: disjoint, in address order, as large as they can be. */
  readonly v4: readonly number[];
  /** IPv6 prefixes as minimal6 gives them (aggregate6.ts). */
  readonly v6: readonly string[];

  constructor(cidrs: readonly Cidr[], v4?: readonly number[], v6?: readonly string[]) {
    const keys = sorted4(cidrs);
    this.v4 = v4 ?? minimal4(keys);
    this.v6 = v6 ?? (keys.length === cidrs.length ? [] : minimal6(sorted6(cidrs)));
  }

  /**
   * The set with `cidrs` added, made from this set's blocks and the new prefixes only: a set that
   * grows group by group (the firewall's exceptions) reads each prefix once, not once per group
   * (docs/performance.md#dual-stack).
   */
  plus(cidrs: readonly Cidr[]): PrefixSet {
    const added = sorted4(cidrs);
    const keys = new Float64Array(this.v4.length / 2 + added.length);
    for (let i = 0; i < this.v4.length; i += 2) keys[i / 2] = this.v4[i]! * 64 + (32 - this.v4[i + 1]!);
    keys.set(added, this.v4.length / 2);
    const v6 = added.length === cidrs.length ? this.v6 : minimal6([...this.v6, ...sorted6(cidrs)].sort());
    return new PrefixSet([], minimal4(keys.sort()), v6);
  }

  /** True when every address of `c` is in the set. */
  covers(c: Cidr): boolean {
    return c.family === 4 ? covers4(this.v4, c) : covers6(this.v6, c);
  }
}

/** `covers` over minimal4's flat list. */
function covers4(blocks: readonly number[], c: Cidr): boolean {
  const start = c.network.v4 >>> 0;
  let lo = 0;
  let hi = blocks.length / 2;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (blocks[2 * mid]! <= start) lo = mid + 1;
    else hi = mid;
  }
  return lo > 0 && within4(start, 32 - c.prefix, blocks[2 * lo - 2]!, blocks[2 * lo - 1]!);
}
