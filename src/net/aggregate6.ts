import { Cidr } from './cidr.js';
import { hex32 } from './space.js';

/**
 * aggregate.ts's work for IPv6 without 128-bit arithmetic. A prefix is keyed by its network as 32
 * hex digits and its length as three: fixed width, so the keys sort natively in address order with
 * a container before what it contains. Aligned prefixes need no sums: one lies inside another when
 * they agree in the other's length of bits, and two are sibling halves when they agree in all but
 * their last bit, which is 0 in the left one; their parent starts where the left one does. BigInt
 * and a Buffer per prefix cost a dual-stack `kgctl plan` a fifth of its time
 * (docs/performance.md#dual-stack).
 */
export interface Block6 {
  /** The network address, 32 hex digits. */
  hex: string;
  prefix: number;
  /** The network address of the block's first input: the block's own, whatever was merged after it. */
  network: Cidr['network'];
  /** The input itself when the block is exactly one input without host bits, so its identity survives. */
  cidr: Cidr | undefined;
}

/** A prefix length as three digits. */
export const length3 = Array.from({ length: 129 }, (_, n) => String(n).padStart(3, '0'));

/** A hex digit's value by its character code. */
const digit = new Int8Array(128).fill(-1);
for (let d = 0; d < 16; d++) digit[d.toString(16).charCodeAt(0)] = d;

/** Whether two addresses of 32 hex digits agree in their first `bits` bits. */
export function agree(a: string, b: string, bits: number): boolean {
  const whole = bits >> 2;
  for (let i = 0; i < whole; i++) if (a.charCodeAt(i) !== b.charCodeAt(i)) return false;
  const rest = bits & 3;
  if (rest === 0) return true;
  const mask = (0xf << (4 - rest)) & 0xf;
  return ((digit[a.charCodeAt(whole)]! ^ digit[b.charCodeAt(whole)]!) & mask) === 0;
}

/** Bit `i` of an address of 32 hex digits, 0 the highest. */
function bit(a: string, i: number): number {
  return (digit[a.charCodeAt(i >> 2)]! >> (3 - (i & 3))) & 1;
}

/** `inner` (its network and length) lies inside `outer`. */
const within = (hex: string, prefix: number, outer: Block6) =>
  prefix >= outer.prefix && agree(hex, outer.hex, outer.prefix);

/**
 * The fewest IPv6 prefixes covering exactly the IPv6 addresses of `cidrs`, in address order; with
 * `outside`, the inputs it covers wholly are left out first.
 */
export function minimal6(cidrs: readonly Cidr[], outside?: readonly Block6[]): Block6[] {
  // Keyed once; the index after the key finds the input again (and breaks ties between equal ones).
  const keys: string[] = [];
  const hexes: string[] = [];
  for (let i = 0; i < cidrs.length; i++) {
    const c = cidrs[i]!;
    if (c.family !== 6) {
      hexes.push('');
      continue;
    }
    const hex = hex32(c.network.bytes);
    hexes.push(hex);
    if (outside && covers6(outside, hex, c.prefix)) continue;
    keys.push(hex + length3[c.prefix]! + i);
  }
  keys.sort();
  const out: Block6[] = [];
  for (let k = 0; k < keys.length; k++) {
    const key = keys[k]!;
    const c = cidrs[Number(key.slice(35))]!;
    const hex = hexes[Number(key.slice(35))]!;
    const last = out[out.length - 1];
    // Sorted with containers first, a block that overlaps the last one lies inside it.
    if (last && within(hex, c.prefix, last)) continue;
    let top: Block6 = { hex, prefix: c.prefix, network: c.network, cidr: c.ip === c.network ? c : undefined };
    // Two sibling halves make their parent, which may complete a half one level up.
    for (;;) {
      const left = out[out.length - 1];
      if (!left || left.prefix !== top.prefix || top.prefix === 0) break;
      const parent = top.prefix - 1;
      if (!agree(left.hex, top.hex, parent) || bit(left.hex, parent) !== 0 || bit(top.hex, parent) !== 1) break;
      out.pop();
      top = { hex: left.hex, prefix: parent, network: left.network, cidr: undefined };
    }
    out.push(top);
  }
  return out;
}

/** The block as a Cidr: the input itself, or its network with the block's length. */
export function cidrOf(b: Block6): Cidr {
  return b.cidr ?? Cidr.of(b.network, b.prefix);
}

/**
 * Whether minimal6's blocks (disjoint, sorted, as large as they can be) cover the prefix: it lies
 * inside the one block starting at or before it (several blocks tiling it would have merged).
 */
export function covers6(blocks: readonly Block6[], hex: string, prefix: number): boolean {
  let lo = 0;
  let hi = blocks.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (blocks[mid]!.hex <= hex) lo = mid + 1;
    else hi = mid;
  }
  const b = blocks[lo - 1];
  return !!b && within(hex, prefix, b);
}
