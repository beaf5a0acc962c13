import ipaddr from 'ipaddr.js';

export type Family = 4 | 6;

/**
 * IPv4 as Kubernetes writes it: four decimal octets without leading zeros. Not ipaddr.js here: it
 * also takes inet_aton forms ("1", "0x1", "010.0.0.1") that Kubernetes never means, and checking for
 * them costs it two more parses, on the path a plan of tens of thousands of addresses takes.
 */
const dottedQuad = /^(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})$/;

/** An IP address (IPv4 or IPv6) in canonical text form with its bytes. */
export class IP {
  private constructor(
    readonly family: Family,
    readonly bytes: Uint8Array,
    readonly text: string,
  ) {}

  /** Parses an address; throws a TypeError naming the value when it is not one. */
  static parse(value: string): IP {
    const ip = IP.tryParse(value);
    if (!ip) throw new TypeError(`not an IP address: ${JSON.stringify(value)}`);
    return ip;
  }

  static tryParse(value: string): IP | null {
    const v4 = dottedQuad.exec(value);
    if (v4) {
      const bytes = new Uint8Array(4);
      for (let i = 0; i < 4; i++) {
        const octet = Number(v4[i + 1]);
        if (octet > 255) return null;
        bytes[i] = octet;
      }
      return IP.fromBytes(bytes);
    }
    if (value.includes(':') && ipaddr.IPv6.isValid(value) && !value.includes('%')) {
      const v6 = ipaddr.IPv6.parse(value);
      return IP.fromBytes(Uint8Array.from(v6.toByteArray()));
    }
    return null;
  }

  static fromBytes(bytes: Uint8Array): IP {
    if (bytes.length === 4) return new IP(4, bytes, `${bytes[0]}.${bytes[1]}.${bytes[2]}.${bytes[3]}`);
    return new IP(6, bytes, ipaddr.fromByteArray(Array.from(bytes)).toString());
  }

  private hostCidr: Cidr | undefined;

  equals(other: IP | null | undefined): boolean {
    return !!other && other.text === this.text;
  }

  /** RFC 1918 and fd00::/16 count as private (Kilo's leader and discovery rule); everything else is public. */
  isPrivate(): boolean {
    const b = this.bytes;
    if (this.family === 4) {
      return b[0] === 10 || (b[0] === 172 && (b[1]! & 0xf0) === 16) || (b[0] === 192 && b[1] === 168);
    }
    return b[0] === 0xfd && b[1] === 0x00;
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
    const ip = IP.tryParse(value.slice(0, slash));
    const prefixText = value.slice(slash + 1);
    // One to three digits without a leading zero: "/024" is a typo, not /24.
    if (!ip || !/^(0|[1-9]\d{0,2})$/.test(prefixText)) return null;
    const prefix = Number(prefixText);
    if (prefix > (ip.family === 4 ? 32 : 128)) return null;
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
    if (prefix === ip.bytes.length * 8) return new Cidr(ip, prefix, ip);
    const masked = new Uint8Array(ip.bytes.length);
    let hostBits = false;
    for (let i = 0; i < masked.length; i++) {
      const bits = Math.max(0, Math.min(8, prefix - i * 8));
      masked[i] = ip.bytes[i]! & ((0xff << (8 - bits)) & 0xff);
      if (masked[i] !== ip.bytes[i]) hostBits = true;
    }
    // Most prefixes are written masked (pod CIDRs, allowed IPs): then the address is the network.
    return new Cidr(ip, prefix, hostBits ? IP.fromBytes(masked) : ip);
  }

  private networkTextCache: string | undefined;

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
    return prefixEqual(this.network.bytes, ip.bytes, this.prefix);
  }

  /** True when the two prefixes share at least one address. */
  overlaps(other: Cidr): boolean {
    if (other.family !== this.family) return false;
    return prefixEqual(this.network.bytes, other.network.bytes, Math.min(this.prefix, other.prefix));
  }

  /** The n-th address of the network (n = 1 is the first after the network address). */
  nth(n: number): IP | null {
    if (this.family === 4 && Number.isSafeInteger(n) && n >= 0) {
      // Without BigInt: the topology asks once per segment, thousands of times.
      const b = this.network.bytes;
      const v = b[0]! * 2 ** 24 + (b[1]! << 16) + (b[2]! << 8) + b[3]! + n;
      if (v > 0xffffffff) return null;
      const ip = IP.fromBytes(Uint8Array.of(v >>> 24, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff));
      return this.contains(ip) ? ip : null;
    }
    const bytes = Uint8Array.from(this.network.bytes);
    let carry = BigInt(n);
    for (let i = bytes.length - 1; i >= 0 && carry > 0n; i--) {
      const sum = BigInt(bytes[i]!) + (carry & 0xffn);
      bytes[i] = Number(sum & 0xffn);
      carry = (carry >> 8n) + (sum >> 8n);
    }
    if (carry > 0n) return null;
    const ip = IP.fromBytes(bytes);
    return this.contains(ip) ? ip : null;
  }

  /** Number of addresses in the prefix, as a bigint (IPv6 prefixes are large). */
  size(): bigint {
    return 1n << BigInt((this.family === 4 ? 32 : 128) - this.prefix);
  }
}

function prefixEqual(a: Uint8Array, b: Uint8Array, prefix: number): boolean {
  const full = prefix >> 3;
  for (let i = 0; i < full; i++) if (a[i] !== b[i]) return false;
  const rest = prefix & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (a[full]! & mask) === (b[full]! & mask);
}
