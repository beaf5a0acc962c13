import { Cidr } from '../../net/cidr.js';

/**
 * The text form of iptables rules, as iptables-save prints them and iptables-restore reads them.
 * Desired rules are rendered in iptables-save's own canonical form, so a rule read back from the
 * machine compares equal to the plan's rule by plain string equality of their keys.
 */

/** Rules carrying a comment with this prefix are Kilo's; nothing else is ever touched. */
export const kiloCommentPrefix = 'Kilo:';
/** Chains with this prefix are Kilo's: replaced whole, or removed when the plan drops them. */
export const kiloChainPrefix = 'KILO-';

/** xt_comment keeps at most 255 bytes. */
const maxCommentBytes = 255;

/** Quotes a value the way xtables_save_string does: bare if only [A-Za-z0-9_-], else "…" with \ escapes. */
export function quote(value: string): string {
  if (/^[A-Za-z0-9_-]+$/.test(value)) return value;
  return `"${value.replace(/["\\']/g, (c) => `\\${c}`)}"`;
}

/** Splits one restore/save line into arguments: double quotes group, a backslash inside them escapes. */
export function tokenize(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let inToken = false;
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quoted) {
      if (c === '\\' && i + 1 < line.length) cur += line[++i];
      else if (c === '"') quoted = false;
      else cur += c;
    } else if (c === '"') {
      quoted = true;
      inToken = true;
    } else if (c === ' ' || c === '\t') {
      if (inToken) out.push(cur);
      cur = '';
      inToken = false;
    } else {
      cur += c;
      inToken = true;
    }
  }
  if (inToken) out.push(cur);
  return out;
}

/**
 * Protocols iptables-save may print by name or number depending on /etc/protocols; keys and
 * restore input use the number, which every iptables accepts.
 */
const protocolNumbers: Record<string, string> = {
  icmp: '1',
  ipencap: '4',
  tcp: '6',
  udp: '17',
  ipv6: '41',
  gre: '47',
  esp: '50',
  ah: '51',
  'ipv6-icmp': '58',
  icmpv6: '58',
  sctp: '132',
};

export function protocolNumber(p: string): string {
  return protocolNumbers[p.toLowerCase()] ?? p;
}

const longNames: Record<string, string> = {
  '--source': '-s',
  '--destination': '-d',
  '--in-interface': '-i',
  '--out-interface': '-o',
  '--protocol': '-p',
  '--jump': '-j',
  '--goto': '-g',
  '--match': '-m',
};
/** iptables-save prints these first, in this order, whatever order they were given in. */
const headOptions = ['-s', '-d', '-i', '-o', '-p'] as const;

/**
 * Arguments of one rule (without `-A CHAIN`) in iptables-save's order: addresses, interfaces and
 * protocol first, then matches in their given order, then the target with its options. Addresses
 * gain their prefix length (10.4.0.1 → 10.4.0.1/32), as iptables-save prints them.
 */
export function canonicalArgs(args: readonly string[], numericProtocol = true): string[] {
  const head = new Map<string, string[]>();
  const matches: string[] = [];
  let target: string[] = [];
  for (let i = 0; i < args.length; i++) {
    let negate = false;
    let a = args[i]!;
    if (a === '!' && i + 1 < args.length) {
      negate = true;
      a = args[++i]!;
    }
    a = longNames[a] ?? a;
    if ((headOptions as readonly string[]).includes(a)) {
      let v = args[++i];
      if (v === undefined)
        throw new Error(`iptables option ${a} needs a value in rule ${JSON.stringify(args.join(' '))}`);
      if (a === '-s' || a === '-d') v = canonicalAddress(v);
      if (a === '-p') v = numericProtocol ? protocolNumber(v) : v;
      head.set(a, negate ? ['!', a, v] : [a, v]);
    } else if (a === '-j' || a === '-g') {
      target = [a, ...args.slice(i + 1)];
      break;
    } else {
      if (negate) matches.push('!');
      matches.push(a);
    }
  }
  return [...headOptions.flatMap((o) => head.get(o) ?? []), ...matches, ...target];
}

function canonicalAddress(v: string): string {
  const c = Cidr.tryParse(v.includes('/') ? v : `${v}/${v.includes(':') ? 128 : 32}`);
  return c ? c.networkText : v;
}

/** The args of a Kilo rule with its comment match placed where Kilo puts it: just before the target. */
export function withComment(args: readonly string[], comment: string): string[] {
  checkComment(comment);
  const j = args.findIndex((a) => a === '-j' || a === '-g' || a === '--jump' || a === '--goto');
  const at = j < 0 ? args.length : j;
  return [...args.slice(0, at), '-m', 'comment', '--comment', comment, ...args.slice(at)];
}

export function checkComment(comment: string): void {
  // A newline would end the restore line early; iptables would reject the rest as garbage.
  if (/[\x00-\x1f\x7f]/.test(comment))
    throw new Error(`iptables comment ${JSON.stringify(comment)} contains a control character`);
  if (Buffer.byteLength(comment) > maxCommentBytes) {
    throw new Error(`iptables comment ${JSON.stringify(comment)} is longer than ${maxCommentBytes} bytes`);
  }
}

/**
 * One rule as restore text, spelled as iptables-save spells it: comments through xtables quoting,
 * other values bare unless they would not survive tokenizing.
 */
export function joinArgs(args: readonly string[]): string {
  return args.map((a, i) => (args[i - 1] === '--comment' || a === '' || /[\s"'\\]/.test(a) ? quote(a) : a)).join(' ');
}

/** What two rules of a chain compare by: equal keys, same rule (protocol names folded to numbers). */
export function ruleKey(chain: string, canonical: readonly string[]): string {
  const parts = [chain];
  for (let i = 0; i < canonical.length; i++) {
    const a = canonical[i]!;
    parts.push(a);
    if (a === '-p' && i + 1 < canonical.length) parts.push(protocolNumber(canonical[++i]!));
  }
  return parts.join('\u0000');
}

/** The comment of a rule's `-m comment --comment X`, or null. */
export function commentOf(args: readonly string[]): string | null {
  for (let i = 0; i + 3 < args.length; i++) {
    if (args[i] === '-m' && args[i + 1] === 'comment' && args[i + 2] === '--comment') return args[i + 3]!;
  }
  return null;
}

/** The chain a rule jumps or goes to, or null. */
export function targetOf(args: readonly string[]): string | null {
  for (let i = 0; i + 1 < args.length; i++) if (args[i] === '-j' || args[i] === '-g') return args[i + 1]!;
  return null;
}

export function isKiloComment(comment: string | null): boolean {
  return comment !== null && comment.startsWith(kiloCommentPrefix);
}
