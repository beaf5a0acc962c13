import ipaddr from 'ipaddr.js';

export type Family = 4 | 6;

/**
 * IPv4 as Kubernetes writes it: four decimal octets without leading zeros, read between `from` and
 * `to`; the address as an unsigned 32-bit number, or -1. Not ipaddr.js (it also takes inet_aton
 * forms, "0x1", that Kubernetes never means) nor a regular expression: see docs/performance.md#parsing.
 */
function parseV4(s: string, from: number, to: number): number {
  let value = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i);
    if (c === 46) {
      if (digits === 0 || dots === 3) return -1;
      value = value * 256 + octet;
      dots++;
      octet = 0;
      digits = 0;
    } else {
      if (c < 48 || c > 57 || (digits === 1 && octet === 0)) return -1;
      octet = octet * 10 + c - 48;
      if (octet > 255) return -1;
      digits++;
    }
  }
  return dots === 3 && digits > 0 ? value * 256 + octet : -1;
}

/** A prefix length of one to three digits without a leading zero ("/024" is a typo, not /24), or -1. */
function parseLength(s: string, from: number): number {
  const n = s.length - from;
  if (n < 1 || n > 3 || (n > 1 && s.charCodeAt(from) === 48)) return -1;
  let v = 0;
  for (let i = from; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return -1;
    v = v * 10 + c - 48;
  }
  return v;
}

/** The IPv4 mask of a prefix length as a 32-bit integer. */
const mask4 = (prefix: number) => (prefix === 0 ? 0 : -1 << (32 - prefix));

/**
 * Whether `text` is an IPv4 prefix exactly as Cidr's networkText writes it (canonical octets and
 * length, host bits zero), checked without making a Cidr: most of a plan's ten thousand
 * destinations are, and then need neither a Cidr nor a memo entry.
 */
export function isCanonicalPrefix4(text: string): boolean {
  const slash = text.indexOf('/');
  if (slash < 0) return false;
  const prefix = parseLength(text, slash + 1);
  const v = prefix < 0 || prefix > 32 ? -1 : parseV4(text, 0, slash);
  return v >= 0 && ((v | 0) & mask4(prefix)) === (v | 0);
}

/**
 * Whether the last text parseV6 read is already what v6Text would write (RFC 5952: lowercase, no
 * leading zeros, "::" for the first longest run of two or more zero groups and nowhere else); then
 * that text is the address's text, as with IPv4, and formatting the bytes again is skipped. A
 * dual-stack cluster writes its addresses that way (docs/performance.md#dual-stack).
 */
let parsedCanonical = false;

/** parseV6's groups as read, before the "::" is expanded: no array made per address. */
const scratchGroups = new Int32Array(8);

/**
 * The 16 bytes of IPv6 text made only of hex groups (1 to 4 digits) and at most one "::", the
 * form of nearly every address here; null for anything else, which ipaddr then reads (an embedded
 * IPv4 part, a zone) or refuses. Hand-read as IPv4 is: docs/performance.md#dual-stack. Sets
 * parsedCanonical.
 */
function parseV6(text: string): Uint8Array | null {
  parsedCanonical = false;
  const n = text.length;
  if (n < 2 || n > 39) return null;
  const groups = scratchGroups;
  let count = 0;
  let gap = -1;
  let i = 0;
  // No upper-case digit, no leading zero: the rest of canonical is the "::" (below).
  let plain = true;
  if (text.charCodeAt(0) === 58) {
    if (text.charCodeAt(1) !== 58) return null;
    gap = 0;
    i = 2;
    if (i === n) {
      parsedCanonical = true;
      return new Uint8Array(16);
    }
  }
  for (;;) {
    let v = 0;
    let digits = 0;
    while (i < n && digits <= 4) {
      const c = text.charCodeAt(i);
      const d = c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : -1;
      if (d < 0) break;
      if (c <= 70 && c >= 65) plain = false;
      else if (digits === 1 && v === 0) plain = false;
      v = v * 16 + d;
      digits++;
      i++;
    }
    if (digits === 0 || digits > 4 || count === 8) return null;
    groups[count++] = v;
    if (i === n) break;
    if (text.charCodeAt(i) !== 58) return null;
    i++;
    if (i < n && text.charCodeAt(i) === 58) {
      if (gap >= 0) return null;
      gap = count;
      i++;
      if (i === n) break;
    } else if (i === n) return null;
  }
  if (gap < 0 ? count !== 8 : count > 7) return null;
  const out = new Uint8Array(16);
  const tail = gap < 0 ? 0 : count - gap;
  for (let g = 0; g < count; g++) {
    const at = gap < 0 || g < gap ? g : 8 - tail + (g - gap);
    out[2 * at] = groups[g]! >> 8;
    out[2 * at + 1] = groups[g]! & 0xff;
  }
  parsedCanonical = plain && zeroRunIsCanonical(out, gap, 8 - count);
  return out;
}

/**
 * Whether text with its "::" at group `gap` standing for `run` zero groups (gap -1: no "::") puts
 * it where v6Text does, and is not an IPv4-mapped address (ipaddr writes those its own way).
 */
function zeroRunIsCanonical(b: Uint8Array, gap: number, run: number): boolean {
  if (isV4Mapped(b)) return false;
  const best = longestZeroRun(b);
  return gap < 0 ? best < 0 : best === gap * 16 + run;
}

/** ::ffff:0:0/96. */
function isV4Mapped(b: Uint8Array): boolean {
  for (let i = 0; i < 10; i++) if (b[i] !== 0) return false;
  return b[10] === 0xff && b[11] === 0xff;
}

/**
 * The first longest run of two or more zero groups, what RFC 5952 writes as "::", as start * 16 +
 * length (one number, no pair to allocate); -1 when there is none.
 */
function longestZeroRun(b: Uint8Array): number {
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8;) {
    if (b[2 * i] !== 0 || b[2 * i + 1] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && b[2 * j] === 0 && b[2 * j + 1] === 0) j++;
    if (j - i > bestLength) [bestStart, bestLength] = [i, j - i];
    i = j;
  }
  return bestStart < 0 ? -1 : bestStart * 16 + bestLength;
}

/**
 * RFC 5952 text of 16 bytes, as ipaddr's toString writes it, without its arrays and regular
 * expressions (a dual-stack plan formats an IPv6 address per node: docs/performance.md#parsing):
 * lowercase groups without leading zeros, the first longest run of two or more zero groups as "::".
 * Null for an IPv4-mapped address (::ffff:0:0/96), which ipaddr formats its own way.
 */
function v6Text(b: Uint8Array): string | null {
  if (isV4Mapped(b)) return null;
  const best = longestZeroRun(b);
  const bestStart = best < 0 ? -1 : best >> 4;
  const bestEnd = best < 0 ? -1 : bestStart + (best & 15);
  // One string built up, no arrays of groups (docs/performance.md#dual-stack).
  let text = '';
  for (let i = 0; i < 8; i++) {
    if (i === bestStart) {
      text += '::';
      i = bestEnd - 1;
      continue;
    }
    if (i > 0 && i !== bestEnd) text += ':';
    text += ((b[2 * i]! << 8) | b[2 * i + 1]!).toString(16);
  }
  return text;
}

/** v6Text, or ipaddr's text of an IPv4-mapped address. */
const v6TextOf = (b: Uint8Array) => v6Text(b) ?? ipaddr.fromByteArray(Array.from(b)).toString();

const v4Text = (v: number) => `${v >>> 24}.${(v >>> 16) & 0xff}.${(v >>> 8) & 0xff}.${v & 0xff}`;

/**
 * An IP address (IPv4 or IPv6) in canonical text form. An IPv4 address is one 32-bit integer, not a
 * byte array; its text is made when first asked for, or is the text it was parsed from
 * (docs/performance.md#parsing).
 */
export class IP {
  private constructor(
    readonly family: Family,
    private textCache: string | undefined,
    /** IPv4: the address as a signed 32-bit integer (docs/performance.md#parsing); IPv6: 0. */
    readonly v4: number,
    /** IPv6: its 16 bytes; IPv4: null. */
    private readonly v6: Uint8Array | null,
  ) {}

  /**
   * The canonical text: dotted quad, or RFC 5952 for IPv6. Made when first asked for, for IPv6
   * too: an internal IP's network or a computed address may never be printed.
   */
  get text(): string {
    return (this.textCache ??= this.v6 ? v6TextOf(this.v6) : v4Text(this.v4));
  }

  /** Parses an address; throws a TypeError naming the value when it is not one. */
  static parse(value: string): IP {
    const ip = IP.tryParse(value);
    if (!ip) throw new TypeError(`not an IP address: ${JSON.stringify(value)}`);
    return ip;
  }

  static tryParse(value: string): IP | null {
    const v = parseV4(value, 0, value.length);
    // Only the canonical form parses, so the text is the value itself.
    if (v >= 0) return new IP(4, value, v | 0, null);
    const bytes = parseV6(value);
    if (bytes) return parsedCanonical ? new IP(6, value, 0, bytes) : IP.fromBytes(bytes);
    if (value.includes(':') && ipaddr.IPv6.isValid(value) && !value.includes('%')) {
      return IP.fromBytes(Uint8Array.from(ipaddr.IPv6.parse(value).toByteArray()));
    }
    return null;
  }

  /** The IPv4 address of a 32-bit integer (signed or unsigned). */
  static fromV4(value: number): IP {
    return new IP(4, undefined, value | 0, null);
  }

  static fromBytes(bytes: Uint8Array): IP {
    if (bytes.length === 4) return IP.fromV4((bytes[0]! << 24) | (bytes[1]! << 16) | (bytes[2]! << 8) | bytes[3]!);
    return new IP(6, undefined, 0, bytes);
  }

  /** The address's bytes in network order (4 or 16); a fresh array for IPv4. */
  get bytes(): Uint8Array {
    if (this.v6) return this.v6;
    const v = this.v4;
    return Uint8Array.of(v >>> 24, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff);
  }

  private hostCidr: Cidr | undefined;

  equals(other: IP | null | undefined): boolean {
    if (!other || other.family !== this.family) return false;
    return this.v6 ? prefixEqual(this.v6, other.v6!, 128) : other.v4 === this.v4;
  }

  /** 0.0.0.0 or :: — an address nobody can send to. */
  isUnspecified(): boolean {
    return this.v6 ? this.v6.every((b) => b === 0) : this.v4 === 0;
  }

  /** RFC 1918 and fd00::/16 count as private (Kilo's leader and discovery rule); everything else is public. */
  isPrivate(): boolean {
    if (this.v6) return this.v6[0] === 0xfd && this.v6[1] === 0x00;
    const v = this.v4;
    return v >>> 24 === 10 || v >>> 20 === 0xac1 || v >>> 16 === 0xc0a8;
  }

  /**
   * Not routed on the Internet: RFC 1918, 100.64.0.0/10 (carrier-grade NAT, RFC 6598) and fc00::/7
   * (unique local, RFC 4193). Wider than isPrivate, which stays Kilo's leader rule so that Kilo and
   * kilo-ts agents elect the same leaders; this one decides what an address is for (internal IP or
   * endpoint) and whether IPv6 pod traffic is masqueraded.
   */
  isNonPublic(): boolean {
    if (this.v6) return (this.v6[0]! & 0xfe) === 0xfc;
    const v = this.v4;
    return v >>> 24 === 10 || v >>> 20 === 0xac1 || v >>> 16 === 0xc0a8 || v >>> 22 === 0x191;
  }

  /** 169.254.0.0/16 or fe80::/10: valid on one link only, so never an internal IP or an endpoint. */
  isLinkLocal(): boolean {
    if (this.v6) return this.v6[0] === 0xfe && (this.v6[1]! & 0xc0) === 0x80;
    return this.v4 >>> 16 === 0xa9fe;
  }

  /** The address as a single-address CIDR (/32 or /128). */
  toHostCidr(): Cidr {
    // Memoised: plans of large clusters ask for the same /32s many times.
    return (this.hostCidr ??= Cidr.of(this, this.family === 4 ? 32 : 128));
  }

  toString(): string {
    return this.text;
  }
}

/**
 * An IP with a prefix length. `ip` keeps the host bits as written (an internal IP "10.0.0.5/24"
 * is an address with its mask); `network` is the masked prefix.
 */
export class Cidr {
  private constructor(
    readonly ip: IP,
    readonly prefix: number,
    readonly network: IP,
    private networkTextCache?: string,
  ) {}

  get family(): Family {
    return this.ip.family;
  }

  static parse(value: string): Cidr {
    const c = Cidr.tryParse(value);
    if (!c) throw new TypeError(`not a CIDR: ${JSON.stringify(value)}`);
    return c;
  }

  static tryParse(value: string): Cidr | null {
    const slash = value.indexOf('/');
    if (slash < 0) return null;
    const prefix = parseLength(value, slash + 1);
    if (prefix < 0) return null;
    const v = parseV4(value, 0, slash);
    if (v >= 0) {
      if (prefix > 32) return null;
      const ip = IP.fromV4(v);
      // Most prefixes are written masked (pod CIDRs, allowed IPs), and IPv4 parses only in
      // canonical form: then the value is the network text.
      return (ip.v4 & mask4(prefix)) === ip.v4 ? new Cidr(ip, prefix, ip, value) : Cidr.of(ip, prefix);
    }
    const ip = IP.tryParse(value.slice(0, slash));
    if (!ip || prefix > (ip.family === 4 ? 32 : 128)) return null;
    return Cidr.of(ip, prefix);
  }

  /**
   * A prefix as routes and rules write it: a CIDR, or a bare address meaning its host prefix
   * (/32, /128), which is how iproute2 prints one.
   */
  static tryParsePrefix(value: string): Cidr | null {
    return value.includes('/') ? Cidr.tryParse(value) : (IP.tryParse(value)?.toHostCidr() ?? null);
  }

  static of(ip: IP, prefix: number): Cidr {
    if (ip.family === 4) {
      const network = ip.v4 & mask4(prefix);
      return new Cidr(ip, prefix, network === ip.v4 ? ip : IP.fromV4(network));
    }
    if (prefix === 128) return new Cidr(ip, prefix, ip);
    const bytes = ip.bytes;
    const masked = new Uint8Array(16);
    let hostBits = false;
    for (let i = 0; i < 16; i++) {
      const bits = Math.max(0, Math.min(8, prefix - i * 8));
      masked[i] = bytes[i]! & ((0xff << (8 - bits)) & 0xff);
      if (masked[i] !== bytes[i]) hostBits = true;
    }
    // Most prefixes are written masked (pod CIDRs, allowed IPs): then the address is the network.
    return new Cidr(ip, prefix, hostBits ? IP.fromBytes(masked) : ip);
  }

  /** The masked prefix, e.g. "10.0.0.0/24" for "10.0.0.5/24". */
  get networkText(): string {
    return (this.networkTextCache ??= `${this.network.text}/${this.prefix}`);
  }

  /** As written with host bits, e.g. "10.0.0.5/24". */
  toString(): string {
    return `${this.ip.text}/${this.prefix}`;
  }

  /** The network prefix as a CIDR without host bits. */
  masked(): Cidr {
    return this.ip === this.network ? this : Cidr.of(this.network, this.prefix);
  }

  contains(ip: IP): boolean {
    if (ip.family !== this.family) return false;
    if (ip.family === 4) return ((ip.v4 ^ this.network.v4) & mask4(this.prefix)) === 0;
    return prefixEqual(this.network.bytes, ip.bytes, this.prefix);
  }

  /** True when the two prefixes share at least one address. */
  overlaps(other: Cidr): boolean {
    if (other.family !== this.family) return false;
    const prefix = Math.min(this.prefix, other.prefix);
    if (other.family === 4) return ((other.network.v4 ^ this.network.v4) & mask4(prefix)) === 0;
    return prefixEqual(this.network.bytes, other.network.bytes, prefix);
  }

  /**
   * IPv4 addresses nth made, by n: the agent's topology asks its subnet for every segment's address
   * every pass, and one kept IP keeps its text and host CIDR too (20,000 of each per pass otherwise).
   */
  private nthMemo: (IP | null)[] | undefined;

  /** The n-th address of the network (n = 1 is the first after the network address). */
  nth(n: number): IP | null {
    if (this.family === 4 && Number.isSafeInteger(n) && n >= 0) {
      if (n < nthMemoLimit) {
        const memo = (this.nthMemo ??= []);
        let ip = memo[n];
        if (ip === undefined) memo[n] = ip = this.nth4(n);
        return ip;
      }
      return this.nth4(n);
    }
    if (!Number.isSafeInteger(n) || n < 0) return null;
    const bytes = Uint8Array.from(this.network.bytes);
    // Plain numbers, a byte at a time (n < 2^53): a dual-stack topology asks once per segment.
    let carry = n;
    for (let i = bytes.length - 1; i >= 0 && carry > 0; i--) {
      const sum = bytes[i]! + (carry % 256);
      bytes[i] = sum & 0xff;
      carry = Math.floor(carry / 256) + (sum >> 8);
    }
    if (carry > 0) return null;
    const ip = IP.fromBytes(bytes);
    return this.contains(ip) ? ip : null;
  }

  private nth4(n: number): IP | null {
    // Without BigInt: the topology asks once per segment, thousands of times.
    const v = (this.network.v4 >>> 0) + n;
    if (v > 0xffffffff) return null;
    const ip = IP.fromV4(v);
    return this.contains(ip) ? ip : null;
  }

  /** Number of addresses in the prefix, as a bigint (IPv6 prefixes are large). */
  size(): bigint {
    return 1n << BigInt((this.family === 4 ? 32 : 128) - this.prefix);
  }
}

/** Slots up to a /12's: a dense array for any mesh subnet, not for an arbitrary nth of 0.0.0.0/0. */
const nthMemoLimit = 1 << 20;

function prefixEqual(a: Uint8Array, b: Uint8Array, prefix: number): boolean {
  const full = prefix >> 3;
  for (let i = 0; i < full; i++) if (a[i] !== b[i]) return false;
  const rest = prefix & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (a[full]! & mask) === (b[full]! & mask);
}
