import { IP, type Cidr, type Family } from './cidr.js';

/**
 * Addresses of one family as numbers to compute ranges with: plain numbers for IPv4 (exact, since
 * 2^32 is far below 2^53) and BigInt for IPv6 only: docs/performance.md#address-arithmetic.
 */
export interface AddressSpace<N extends number | bigint> {
  readonly family: Family;
  /** 32 or 128. */
  readonly width: number;
  /** The prefix's network address. */
  start(c: Cidr): N;
  /** The first address after the `bits` host bits from `start`. */
  end(start: N, bits: number): N;
  /** `start` masked to its first `length` bits, as a key unique per (length, masked address). */
  key(start: N, length: number): number | string;
  /**
   * True when the range of `bits` host bits at `start` lies inside the one at `outerStart` (both
   * aligned): for IPv4 a comparison of high bits, nothing to add up (and box) above 2^31.
   */
  within(start: N, bits: number, outerStart: N, outerBits: number): boolean;
  /** True when `start` is a multiple of 2^bits. */
  aligned(start: N, bits: number): boolean;
  ip(start: N): IP;
}

const pow2 = Array.from({ length: 33 }, (_, bits) => 2 ** bits);

/**
 * The number of 16 bytes: three plain numbers (48, 48 and 32 bits, exact below 2^53) made BigInt,
 * half the time of a hex text read by BigInt (a dual-stack firewall makes one per IPv6 prefix:
 * docs/performance.md#dual-stack).
 */
function bigintOf(b: Uint8Array): bigint {
  const high = ((b[0]! * 256 + b[1]!) * 256 + b[2]!) * 0x1000000 + ((b[3]! << 16) | (b[4]! << 8) | b[5]!);
  const middle = ((b[6]! * 256 + b[7]!) * 256 + b[8]!) * 0x1000000 + ((b[9]! << 16) | (b[10]! << 8) | b[11]!);
  const low = ((b[12]! << 24) | (b[13]! << 16) | (b[14]! << 8) | b[15]!) >>> 0;
  return (BigInt(high) << 80n) | (BigInt(middle) << 32n) | BigInt(low);
}

/** The 16 bytes of a number below 2^128. */
function bytesOf(n: bigint): Uint8Array {
  const out = new Uint8Array(16);
  // Four 32-bit words: four BigInt steps instead of a hex text and a Buffer.
  for (let w = 3; w >= 0; w--) {
    const word = Number(n & 0xffffffffn);
    out[4 * w] = word >>> 24;
    out[4 * w + 1] = (word >>> 16) & 0xff;
    out[4 * w + 2] = (word >>> 8) & 0xff;
    out[4 * w + 3] = word & 0xff;
    n >>= 32n;
  }
  return out;
}

const pow2n = Array.from({ length: 129 }, (_, bits) => 1n << BigInt(bits));

/** The top bit: flipping it maps unsigned address order to signed 32-bit integer order. */
const top = 1 << 31;

/**
 * An IPv4 address's number here is the address with its top bit flipped: a signed 32-bit integer
 * in address order, kept unboxed: docs/performance.md#address-arithmetic.
 */
export const ipv4: AddressSpace<number> = {
  family: 4,
  width: 32,
  start: (c) => c.network.v4 ^ top,
  end: (start, bits) => start + pow2[bits]!,
  key: (start, length) => {
    const address = start + pow2[31]!;
    return length * pow2[32]! + address - (address % pow2[32 - length]!);
  },
  within: (start, bits, outerStart, outerBits) =>
    bits <= outerBits && (outerBits === 32 || (start ^ outerStart) >>> outerBits === 0),
  aligned: (start, bits) => (start + pow2[31]!) % pow2[bits]! === 0,
  ip: (start) => IP.fromV4(start ^ top),
};

export const ipv6: AddressSpace<bigint> = {
  family: 6,
  width: 128,
  start: (c) => bigintOf(c.network.bytes),
  end: (start, bits) => start + pow2n[bits]!,
  key: (start, length) => `${length}/${start - (start % pow2n[128 - length]!)}`,
  within: (start, bits, outerStart, outerBits) =>
    bits <= outerBits && outerStart <= start && start + pow2n[bits]! <= outerStart + pow2n[outerBits]!,
  aligned: (start, bits) => start % pow2n[bits]! === 0n,
  ip: (start) => IP.fromBytes(bytesOf(start)),
};
