import { Cidr } from './cidr.js';
import { ipv4, ipv6, type AddressSpace } from './space.js';

/** A prefix as an address range: `start` is the network address, `bits` the host bits (32 - prefix). */
interface Block<N> {
  start: N;
  bits: number;
  /** The caller's value when the block is exactly one input, so its caches and identity survive. */
  cidr?: Cidr;
}

function toCidr<N extends number | bigint>(b: Block<N>, space: AddressSpace<N>): Cidr {
  return b.cidr ?? Cidr.of(space.ip(b.start), space.width - b.bits);
}

function blocksOf<N extends number | bigint>(cidrs: readonly Cidr[], space: AddressSpace<N>): Block<N>[] {
  // One loop, not filter and map: once per process over thousands of prefixes, before V8 optimises.
  const blocks: Block<N>[] = [];
  for (let i = 0; i < cidrs.length; i++) {
    const c = cidrs[i]!;
    if (c.family === space.family)
      blocks.push({ start: space.start(c), bits: space.width - c.prefix, cidr: c.ip === c.network ? c : undefined });
  }
  return blocks.sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : b.bits - a.bits));
}

/**
 * The fewest prefixes of one family covering exactly the addresses of `blocks`, in address order.
 * Aligned prefixes either nest or are disjoint, so after sorting (a container first) one pass drops
 * the contained ones, and a stack merges two sibling halves into their parent as soon as the right
 * half is complete; the parent may in turn complete a half one level up.
 */
function minimal<N extends number | bigint>(blocks: Block<N>[], space: AddressSpace<N>): Block<N>[] {
  const out: Block<N>[] = [];
  // An index loop: once per process over thousands of blocks, where a for-of would allocate per element.
  for (let i = 0; i < blocks.length; i++) {
    const b = blocks[i]!;
    const last = out[out.length - 1];
    // Sorted with containers first, an aligned block that overlaps the last one lies inside it.
    if (last && space.within(b.start, b.bits, last.start, last.bits)) continue;
    let top = b;
    for (;;) {
      const left = out[out.length - 1];
      if (!left || left.bits !== top.bits || top.bits === space.width) break;
      if (space.end(left.start, left.bits) !== top.start || !space.aligned(left.start, left.bits + 1)) break;
      out.pop();
      top = { start: left.start, bits: left.bits + 1 };
    }
    out.push(top);
  }
  return out;
}

/**
 * The fewest prefixes covering exactly the addresses of `cidrs`: contained prefixes dropped, sibling
 * halves merged (10.42.0.0/24 + 10.42.1.0/24 = 10.42.0.0/23). IPv4 first, each family in address
 * order, so equal address sets give equal lists. Host bits of the inputs are ignored.
 */
export function aggregate(cidrs: readonly Cidr[]): Cidr[] {
  const out = minimal(blocksOf(cidrs, ipv4), ipv4).map((b) => toCidr(b, ipv4));
  for (const b of minimal(blocksOf(cidrs, ipv6), ipv6)) out.push(toCidr(b, ipv6));
  return out;
}

/** A set of addresses given as prefixes, answering whether a whole prefix lies inside it. */
export class PrefixSet {
  private readonly v4: Block<number>[];
  private readonly v6: Block<bigint>[];

  constructor(cidrs: readonly Cidr[]) {
    this.v4 = minimal(blocksOf(cidrs, ipv4), ipv4);
    this.v6 = minimal(blocksOf(cidrs, ipv6), ipv6);
  }

  /** True when every address of `c` is in the set. */
  covers(c: Cidr): boolean {
    return c.family === 4 ? covers(this.v4, ipv4, c) : covers(this.v6, ipv6, c);
  }
}

/**
 * The blocks are disjoint, sorted and as large as they can be: a prefix inside their union lies
 * inside the one block starting at or before it (several blocks tiling it would have merged).
 */
function covers<N extends number | bigint>(blocks: Block<N>[], space: AddressSpace<N>, c: Cidr): boolean {
  const start = space.start(c);
  let lo = 0;
  let hi = blocks.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (blocks[mid]!.start <= start) lo = mid + 1;
    else hi = mid;
  }
  const b = blocks[lo - 1];
  return !!b && space.within(start, space.width - c.prefix, b.start, b.bits);
}
