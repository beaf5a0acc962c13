import { Cidr, IP } from './cidr.js';

/**
 * IPv6 prefixes for aggregate.ts as short strings, not BigInts and objects: a key is nine UTF-16
 * code units, the network's eight groups and then the prefix length, so that strings compare as
 * the prefixes order (by address, a container before what it contains) and a native sort, with no
 * comparator, puts thousands of them in order. A dual-stack plan aggregates an IPv6 prefix per node
 * and more (docs/performance.md#dual-stack). Containment and sibling halves are read from the
 * groups, bit by bit where a length falls inside one.
 */

/** The key of `c`'s network and length, then two more units: `index`, where it came from. */
export function key6(c: Cidr, index = -1): string {
  const b = c.network.bytes;
  const key = String.fromCharCode(
    (b[0]! << 8) | b[1]!,
    (b[2]! << 8) | b[3]!,
    (b[4]! << 8) | b[5]!,
    (b[6]! << 8) | b[7]!,
    (b[8]! << 8) | b[9]!,
    (b[10]! << 8) | b[11]!,
    (b[12]! << 8) | b[13]!,
    (b[14]! << 8) | b[15]!,
    c.prefix,
  );
  return index < 0 ? key : key + String.fromCharCode(index >>> 16, index & 0xffff);
}

/** The prefix length of a key. */
const lengthOf = (key: string) => key.charCodeAt(8);

/** Whether two keys' addresses agree in their first `bits` bits. */
export function sameBits(a: string, b: string, bits: number): boolean {
  const whole = bits >> 4;
  for (let i = 0; i < whole; i++) if (a.charCodeAt(i) !== b.charCodeAt(i)) return false;
  const rest = bits & 15;
  if (rest === 0) return true;
  const mask = (0xffff << (16 - rest)) & 0xffff;
  return (a.charCodeAt(whole) & mask) === (b.charCodeAt(whole) & mask);
}

/**
 * Whether prefix `a` comes before `b` or is the same prefix, whatever index either carries (a set
 * made by PrefixSet.plus keeps its inputs' indices: they only tell aggregate where a key came from).
 */
function atOrBefore(a: string, b: string): boolean {
  for (let i = 0; i < 9; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return x < y;
  }
  return true;
}

/** The prefix `key` lies inside the prefix `outer`. */
const within = (key: string, outer: string) =>
  lengthOf(outer) <= lengthOf(key) && sameBits(key, outer, lengthOf(outer));

/** The IPv6 prefixes of `cidrs` as keys with their index, in order. */
export function sorted6(cidrs: readonly Cidr[]): string[] {
  const keys: string[] = [];
  for (let i = 0; i < cidrs.length; i++) if (cidrs[i]!.family === 6) keys.push(key6(cidrs[i]!, i));
  return keys.sort();
}

/**
 * aggregate.ts's `minimal` over sorted keys: the fewest prefixes covering exactly theirs, in order.
 * A key left as it came keeps its index; a merged one has none. Keys inside a prefix of `outside`
 * (minimal6's own output, so disjoint and in order) are left out first: one walk along it.
 */
export function minimal6(keys: readonly string[], outside?: readonly string[]): string[] {
  const out: string[] = [];
  let o = 0;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    if (outside) {
      while (o + 1 < outside.length && atOrBefore(outside[o + 1]!, key)) o++;
      if (o < outside.length && within(key, outside[o]!)) continue;
    }
    const n = out.length;
    // Sorted with containers first, a prefix that overlaps the last one lies inside it.
    if (n > 0 && within(key, out[n - 1]!)) continue;
    let top = key;
    // Two sibling halves make their parent, which may complete a half one level up.
    for (;;) {
      const left = out[out.length - 1];
      const length = lengthOf(top);
      if (left === undefined || length === 0 || lengthOf(left) !== length) break;
      if (!sameBits(left, top, length - 1) || bitAt(left, length - 1) !== 0 || bitAt(top, length - 1) !== 1) break;
      out.pop();
      // The left half's address is its parent's.
      top = left.slice(0, 8) + String.fromCharCode(length - 1);
    }
    out.push(top);
  }
  return out;
}

/** Bit `n` (0 the first) of a key's address. */
const bitAt = (key: string, n: number) => (key.charCodeAt(n >> 4) >> (15 - (n & 15))) & 1;

/** Whether the prefix `c` lies inside one of `blocks` (minimal6's output): a binary search. */
export function covers6(blocks: readonly string[], c: Cidr): boolean {
  const key = key6(c);
  let lo = 0;
  let hi = blocks.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (atOrBefore(blocks[mid]!, key)) lo = mid + 1;
    else hi = mid;
  }
  return lo > 0 && within(key, blocks[lo - 1]!);
}

/** The prefix of a key of minimal6's output: the input itself when the key has its index. */
export function cidrOf6(key: string, cidrs: readonly Cidr[]): Cidr {
  if (key.length > 9) {
    const c = cidrs[key.charCodeAt(9) * 0x10000 + key.charCodeAt(10)]!;
    if (c.ip === c.network) return c;
  }
  const bytes = new Uint8Array(16);
  for (let g = 0; g < 8; g++) {
    const v = key.charCodeAt(g);
    bytes[2 * g] = v >> 8;
    bytes[2 * g + 1] = v & 0xff;
  }
  return Cidr.of(IP.fromBytes(bytes), lengthOf(key));
}
