import { Cidr, IP, type Family } from './cidr.js';

/** A prefix as an address range: `start` is the network address, `bits` the host bits (32 - prefix). */
interface Block {
  start: bigint;
  bits: number;
  /** The caller's value when the block is exactly one input, so its caches and identity survive. */
  cidr?: Cidr;
}

const width = (family: Family) => (family === 4 ? 32 : 128);

// One BigInt per address, not one per byte: BigInt arithmetic is what a big cluster's plan pays for.
export function toBigInt(bytes: Uint8Array): bigint {
  if (bytes.length === 4) return BigInt(((bytes[0]! << 24) >>> 0) + (bytes[1]! << 16) + (bytes[2]! << 8) + bytes[3]!);
  return BigInt(`0x${Buffer.from(bytes).toString('hex')}`);
}

/** 2^bits for every host-bit count, so a block's size is a look-up. */
const sizes = Array.from({ length: 129 }, (_, bits) => 1n << BigInt(bits));

function toCidr(b: Block, family: Family): Cidr {
  if (b.cidr) return b.cidr;
  const bytes = new Uint8Array(width(family) / 8);
  let n = b.start;
  for (let i = bytes.length - 1; i >= 0; i--, n >>= 8n) bytes[i] = Number(n & 0xffn);
  return Cidr.of(IP.fromBytes(bytes), width(family) - b.bits);
}

const end = (b: Block) => b.start + sizes[b.bits]!;

function blocksOf(cidrs: readonly Cidr[], family: Family): Block[] {
  const full = width(family);
  return cidrs
    .filter((c) => c.family === family)
    .map((c) => ({
      start: toBigInt(c.network.bytes),
      bits: full - c.prefix,
      cidr: c.ip.text === c.network.text ? c : undefined,
    }))
    .sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : b.bits - a.bits));
}

/**
 * The fewest prefixes of one family covering exactly the addresses of `blocks`, in address order.
 * Aligned prefixes either nest or are disjoint, so after sorting (a container first) one pass drops
 * the contained ones, and a stack merges two sibling halves into their parent as soon as the right
 * half is complete; the parent may in turn complete a half one level up.
 */
function minimal(blocks: Block[], full: number): Block[] {
  const out: Block[] = [];
  for (const b of blocks) {
    const last = out.at(-1);
    if (last && b.start < end(last)) continue;
    out.push(b);
    for (;;) {
      const right = out.at(-1)!;
      const left = out.at(-2);
      if (!left || left.bits !== right.bits || right.bits === full) break;
      if (end(left) !== right.start || left.start % sizes[left.bits + 1]! !== 0n) break;
      out.splice(-2, 2, { start: left.start, bits: left.bits + 1 });
    }
  }
  return out;
}

/**
 * The fewest prefixes covering exactly the addresses of `cidrs`: contained prefixes dropped, sibling
 * halves merged (10.42.0.0/24 + 10.42.1.0/24 = 10.42.0.0/23). IPv4 first, each family in address
 * order, so equal address sets give equal lists. Host bits of the inputs are ignored.
 */
export function aggregate(cidrs: readonly Cidr[]): Cidr[] {
  return ([4, 6] as const).flatMap((family) =>
    minimal(blocksOf(cidrs, family), width(family)).map((b) => toCidr(b, family)),
  );
}

/** A set of addresses given as prefixes, answering whether a whole prefix lies inside it. */
export class PrefixSet {
  private readonly blocks: Record<Family, Block[]>;

  constructor(cidrs: readonly Cidr[]) {
    this.blocks = { 4: minimal(blocksOf(cidrs, 4), 32), 6: minimal(blocksOf(cidrs, 6), 128) };
  }

  /** True when every address of `c` is in the set. */
  covers(c: Cidr): boolean {
    // The blocks are disjoint, sorted and as large as they can be: a prefix inside their union lies
    // inside the one block starting at or before it (several blocks tiling it would have merged).
    const blocks = this.blocks[c.family];
    const start = toBigInt(c.network.bytes);
    let lo = 0;
    let hi = blocks.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (blocks[mid]!.start <= start) lo = mid + 1;
      else hi = mid;
    }
    const b = blocks[lo - 1];
    return !!b && start + sizes[(c.family === 4 ? 32 : 128) - c.prefix]! <= end(b);
  }
}
