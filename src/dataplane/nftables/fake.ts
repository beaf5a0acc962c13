import { Cidr } from '../../net/cidr.js';
import { ExecError, type Exec, type ExecResult } from '../exec.js';
import { answeringExec, FakeNetfilter } from '../iptables/fake.js';
import { LinuxNftablesTables } from './tables.js';

/**
 * An in-memory nftables that speaks the part of `nft` Kilo uses: `nft -f` scripts of one command
 * a line (add/delete table, set, element, chain, rule; flush chain), each script one transaction
 * that applies whole or not at all, and `nft -j list table` in nft's JSON. Beside it, a
 * FakeNetfilter answers iptables, so the Linux nftables backend runs over the pair unchanged.
 */

interface FakeSet {
  type: string;
  elements: Cidr[];
}
interface FakeRule {
  handle: number;
  text: string;
  /** A `counter` rule's figures: from 0 when the rule is added, kept while it stays. */
  packets: number;
  bytes: number;
}
interface FakeChain {
  base: { type: string; hook: string; prio: number; policy: string } | null;
  rules: FakeRule[];
}
interface FakeTable {
  sets: Map<string, FakeSet>;
  chains: Map<string, FakeChain>;
}

class FakeNftError extends Error {}

const priorities: Record<string, number> = { srcnat: 100, dstnat: -100, filter: 0, raw: -300, mangle: -150 };

function parsePriority(text: string): number {
  const m = /^(\w+|-?\d+)(?:\s*([-+])\s*(\d+))?$/.exec(text.trim());
  if (!m) throw new FakeNftError(`bad priority ${text}`);
  const base = /^-?\d+$/.test(m[1]!) ? Number(m[1]) : priorities[m[1]!];
  if (base === undefined) throw new FakeNftError(`unknown priority ${m[1]}`);
  return base + (m[2] ? (m[2] === '-' ? -1 : 1) * Number(m[3]) : 0);
}

/** Tokens of a rule's text, quoted strings kept whole. */
function tokens(text: string): string[] {
  return [...text.matchAll(/"(?:[^"\\]|\\.)*"|\S+/g)].map((m) => m[0]);
}

/** A rule's text in nft's JSON, for the expressions Kilo writes and the simple matches tests plant. */
function ruleJson(
  text: string,
  counted: { packets: number; bytes: number } = { packets: 0, bytes: 0 },
): { expr: unknown[]; comment?: string } {
  const t = tokens(text);
  const expr: unknown[] = [];
  let comment: string | undefined;
  const right = (v: string): unknown => {
    if (v.includes('/') && Cidr.tryParse(v)) {
      const [addr, len] = v.split('/');
      return { prefix: { addr, len: Number(len) } };
    }
    return /^\d+$/.test(v) ? Number(v) : v;
  };
  for (let i = 0; i < t.length; i++) {
    const w = t[i]!;
    if (w === 'comment') comment = JSON.parse(t[++i]!) as string;
    else if (w === 'jump') expr.push({ jump: { target: t[++i] } });
    else if (w === 'counter') expr.push({ counter: { packets: counted.packets, bytes: counted.bytes } });
    else if (['accept', 'drop', 'return', 'masquerade'].includes(w)) expr.push({ [w]: null });
    else if (w === 'meta') expr.push({ match: { op: '==', left: { meta: { key: t[++i] } }, right: right(t[++i]!) } });
    else {
      const field = t[++i];
      const value = t[++i];
      if (field === undefined || value === undefined) throw new FakeNftError(`syntax error at ${w}`);
      expr.push({ match: { op: '==', left: { payload: { protocol: w, field } }, right: right(value) } });
    }
  }
  return comment !== undefined ? { expr, comment } : { expr };
}

const clone = (t: FakeTable): FakeTable => ({
  sets: new Map([...t.sets].map(([n, s]) => [n, { ...s, elements: [...s.elements] }])),
  chains: new Map([...t.chains].map(([n, c]) => [n, { ...c, rules: [...c.rules] }])),
});

export class FakeNftables {
  private tables = new Map<string, FakeTable>();
  private handle = 0;
  /** argv of every nft command, in order. */
  readonly runs: string[][] = [];
  /** No `nft` binary (runs fail as a missing command does), or a kernel without nf_tables. */
  broken: 'no-binary' | 'no-kernel' | null = null;

  /** `nft -f` processes that could have changed something. */
  scriptRuns(): number {
    return this.runs.filter((a) => a[1] === '-f').length;
  }

  /** Runs a script: all of it or, on the first error, none. Throws naming the line. */
  script(text: string): void {
    const work = new Map([...this.tables].map(([k, t]) => [k, clone(t)]));
    const handle = this.handle;
    const lines = text.split('\n');
    try {
      for (const [i, line] of lines.entries()) {
        try {
          if (line.trim() !== '' && !line.trim().startsWith('#')) this.command(work, line.trim());
        } catch (e) {
          if (!(e instanceof FakeNftError)) throw e;
          throw new FakeNftError(`/dev/stdin:${i + 1}:1-1: Error: ${e.message}\n${line}\n^^^`);
        }
      }
    } catch (e) {
      this.handle = handle;
      throw e;
    }
    this.tables = work;
  }

  private command(work: Map<string, FakeTable>, line: string): void {
    const m = /^(add|delete|flush) (table|set|element|chain|rule) (\w+) ([\w-]+)(?: ([\w-]+))?\s*(.*)$/.exec(line);
    if (!m) throw new FakeNftError(`syntax error: ${line}`);
    const [, verb, what, family, tableName, name, rest] = m as unknown as [
      string,
      string,
      string,
      string,
      string,
      string | undefined,
      string,
    ];
    const key = `${family} ${tableName}`;
    const table = work.get(key);
    if (what === 'table') {
      if (verb === 'add') {
        if (!table) work.set(key, { sets: new Map(), chains: new Map() });
      } else if (!table) throw new FakeNftError('No such file or directory');
      else if (verb === 'delete') work.delete(key);
      return;
    }
    if (!table || name === undefined) throw new FakeNftError('No such file or directory');
    if (what === 'set') {
      if (verb === 'add') {
        const type = /type (\w+)/.exec(rest)?.[1];
        if (!type) throw new FakeNftError('set needs a type');
        if (!table.sets.has(name)) table.sets.set(name, { type, elements: [] });
        return;
      }
      if (!table.sets.has(name)) throw new FakeNftError('No such file or directory');
      const used = [...table.chains].find(([, c]) => c.rules.some((r) => tokens(r.text).includes(`@${name}`)));
      if (used) throw new FakeNftError(`Device or resource busy: set ${name} is used by chain ${used[0]}`);
      table.sets.delete(name);
      return;
    }
    if (what === 'element') {
      const set = table.sets.get(name);
      if (!set) throw new FakeNftError('No such file or directory');
      const list = /^\{(.*)\}$/.exec(rest)?.[1] ?? '';
      for (const text of list
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '')) {
        const c = Cidr.tryParsePrefix(text);
        if (!c || c.family !== (set.type === 'ipv6_addr' ? 6 : 4)) throw new FakeNftError(`Could not parse ${text}`);
        const at = set.elements.findIndex((e) => e.networkText === c.networkText);
        if (verb === 'delete') {
          if (at < 0) throw new FakeNftError(`Could not process rule: No such file or directory: ${text}`);
          set.elements.splice(at, 1);
        } else if (at < 0) {
          if (set.elements.some((e) => e.contains(c.network) || c.contains(e.network)))
            throw new FakeNftError(`conflicting intervals specified: ${text}`);
          set.elements.push(c);
        }
      }
      return;
    }
    if (what === 'chain') {
      const chain = table.chains.get(name);
      if (verb === 'add') {
        if (chain) return;
        const b = /type (\w+) hook (\w+) priority ([^;]+);(?: policy (\w+);)?/.exec(rest);
        table.chains.set(name, {
          base: b ? { type: b[1]!, hook: b[2]!, prio: parsePriority(b[3]!), policy: b[4] ?? 'accept' } : null,
          rules: [],
        });
        return;
      }
      if (!chain) throw new FakeNftError('No such file or directory');
      if (verb === 'flush') chain.rules = [];
      else {
        if (chain.rules.length > 0) throw new FakeNftError(`Device or resource busy: chain ${name} is not empty`);
        const used = [...table.chains].find(([, c]) => c.rules.some((r) => / jump (\S+)/.exec(r.text)?.[1] === name));
        if (used) throw new FakeNftError(`Device or resource busy: chain ${name} is jumped to`);
        table.chains.delete(name);
      }
      return;
    }
    // rule
    const chain = table.chains.get(name);
    if (!chain) throw new FakeNftError('No such file or directory');
    if (verb === 'delete') {
      const h = /^handle (\d+)$/.exec(rest);
      const at = chain.rules.findIndex((r) => r.handle === Number(h?.[1]));
      if (at < 0) throw new FakeNftError('No such file or directory');
      chain.rules.splice(at, 1);
      return;
    }
    ruleJson(rest);
    for (const ref of rest.match(/@[\w-]+/g) ?? [])
      if (!table.sets.has(ref.slice(1))) throw new FakeNftError(`Set '${ref.slice(1)}' does not exist`);
    const target = / jump (\S+)/.exec(` ${rest}`)?.[1];
    if (target !== undefined && !table.chains.has(target))
      throw new FakeNftError(`Could not process rule: No such file or directory: chain ${target}`);
    chain.rules.push({ handle: ++this.handle, text: rest, packets: 0, bytes: 0 });
  }

  /**
   * Packets forwarded from interface `iif` to `oif`, as every table's forward base chains see them:
   * a `counter` rule whose interface matches (`meta iifname`, `meta oifname`; a rule with another
   * match cannot match, the packets have no addresses here) counts them, until a rule accepts or
   * drops them in that chain.
   */
  forward(iif: string, oif: string, packets: number, bytes: number): void {
    for (const table of this.tables.values())
      for (const chain of table.chains.values()) {
        if (chain.base?.hook !== 'forward') continue;
        for (const r of chain.rules) {
          const t = tokens(r.text);
          const meta = (key: string) =>
            t.indexOf(key) > 0 && t[t.indexOf(key) - 1] === 'meta' ? t[t.indexOf(key) + 1] : undefined;
          const words = t.filter(
            (w, i) => t[i - 1] !== 'meta' && t[i - 2] !== 'meta' && t[i - 1] !== 'comment' && w !== 'meta',
          );
          if (words.some((w) => !['counter', 'accept', 'drop', 'comment'].includes(w))) continue;
          if ((meta('iifname') ?? iif) !== iif || (meta('oifname') ?? oif) !== oif) continue;
          if (t.includes('counter')) {
            r.packets += packets;
            r.bytes += bytes;
          }
          if (t.includes('accept') || t.includes('drop')) break;
        }
      }
  }

  /** `nft -j list table FAMILY NAME`. */
  list(family: string, name: string): string {
    const table = this.tables.get(`${family} ${name}`);
    if (!table) throw new FakeNftError(`Error: No such file or directory\nlist table ${family} ${name}`);
    const items: unknown[] = [{ metainfo: { version: '1.0.6', json_schema_version: 1 } }, { table: { family, name } }];
    for (const [n, s] of table.sets) {
      const elem = s.elements
        .map((c) => c)
        .sort((a, b) => (a.networkText < b.networkText ? -1 : 1))
        .map((c) =>
          c.prefix === (c.family === 4 ? 32 : 128)
            ? c.network.text
            : { prefix: { addr: c.network.text, len: c.prefix } },
        );
      items.push({
        set: { family, name: n, table: name, type: s.type, flags: ['interval'], ...(elem.length ? { elem } : {}) },
      });
    }
    for (const [n, c] of table.chains)
      items.push({ chain: { family, table: name, name: n, ...(c.base ? { ...c.base } : {}) } });
    for (const [n, c] of table.chains)
      for (const r of c.rules)
        items.push({ rule: { family, table: name, chain: n, handle: r.handle, ...ruleJson(r.text, r) } });
    return JSON.stringify({ nftables: items });
  }

  /** `nft -j list chain FAMILY TABLE CHAIN`. */
  listChain(family: string, name: string, chainName: string): string {
    const chain = this.tables.get(`${family} ${name}`)?.chains.get(chainName);
    if (!chain) throw new FakeNftError(`Error: No such file or directory\nlist chain ${family} ${name} ${chainName}`);
    const items: unknown[] = [
      { metainfo: { version: '1.0.6', json_schema_version: 1 } },
      { chain: { family, table: name, name: chainName, ...(chain.base ? { ...chain.base } : {}) } },
      ...chain.rules.map((r) => ({
        rule: { family, table: name, chain: chainName, handle: r.handle, ...ruleJson(r.text, r) },
      })),
    ];
    return JSON.stringify({ nftables: items });
  }

  /** The rules of a chain with their handles, for tests that edit by hand. */
  handles(family: string, table: string, chain: string): FakeRule[] {
    return [...(this.tables.get(`${family} ${table}`)?.chains.get(chain)?.rules ?? [])];
  }

  /** An Exec that answers `nft -f -` and `nft -j list table`. */
  answer(argv: readonly string[], input: string): ExecResult {
    this.runs.push([...argv]);
    if (this.broken === 'no-binary') throw new ExecError(argv, null, '', `spawn nft ENOENT`);
    if (this.broken === 'no-kernel')
      throw new ExecError(argv, 1, '', 'Error: Could not process rule: Operation not supported\n');
    try {
      if (argv[1] === '-f') {
        this.script(argv[2] === '-' ? input : '');
        return { stdout: '', stderr: '' };
      }
      if (argv[1] === '-j' && argv[2] === 'list' && argv[3] === 'table')
        return { stdout: this.list(argv[4]!, argv[5]!), stderr: '' };
      if (argv[1] === '-j' && argv[2] === 'list' && argv[3] === 'chain')
        return { stdout: this.listChain(argv[4]!, argv[5]!, argv[6]!), stderr: '' };
      if (argv[1] === 'list' && argv[2] === 'tables')
        return { stdout: [...this.tables.keys()].map((k) => `table ${k}\n`).join(''), stderr: '' };
      throw new FakeNftError(`the fake nft does not know ${argv.join(' ')}`);
    } catch (e) {
      if (!(e instanceof FakeNftError)) throw e;
      throw new ExecError(argv, 1, '', `${e.message}\n`);
    }
  }
}

/** An Exec over a fake nftables and a fake iptables: nft goes to one, everything iptables to the other. */
export function fakeNetfilterExec(nft: FakeNftables, iptables: FakeNetfilter): Exec {
  const ipt = iptables.exec();
  const nftExec = answeringExec((argv, input) => nft.answer(argv, input));
  return { ...nftExec, run: (argv, opts) => (argv[0] === 'nft' ? nftExec : ipt).run(argv, opts) };
}

/** The nftables FirewallTables over an in-memory nftables and iptables. */
export function createFakeNftables(): {
  tables: LinuxNftablesTables;
  nft: FakeNftables;
  iptables: FakeNetfilter;
  exec: Exec;
} {
  const nft = new FakeNftables();
  const iptables = new FakeNetfilter('nft');
  const exec = fakeNetfilterExec(nft, iptables);
  return { tables: new LinuxNftablesTables(exec), nft, iptables, exec };
}
