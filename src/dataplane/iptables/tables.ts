import type { Firewall, IPFamily } from '../../mesh/types.js';
import { ExecError, ExecInterrupted, type Exec, type RunOptions } from '../exec.js';
import type { DiffAgainst, FirewallTables, FirewallWritten, IptablesWritten, Ops, RelayedCount } from '../types.js';
import { describeRule, ipv6Demand, ipv6Unusable, type IPv6Demand } from './ipv6.js';
import { familyName, renderParsed, type FamilyDump, type RestoreBatch, type SavedTables } from './render.js';
import { iptablesRulesOf, relayedComment, type IptablesRules, type IptablesTable } from './rules.js';
import { quote } from './syntax.js';
import { parseSave } from './save.js';

export type IptablesBackend = 'nft' | 'legacy';

/** A restore batch iptables refused; names the family, the line and what iptables said. */
export class IptablesError extends Error {
  constructor(
    readonly family: IPFamily,
    readonly line: number | null,
    readonly lineText: string | null,
    readonly detail: string,
  ) {
    super(
      `${familyName(family)} firewall update failed` +
        (line !== null ? ` at restore line ${line} ${JSON.stringify(lineText ?? '')}` : '') +
        `: ${detail}`,
    );
    this.name = 'IptablesError';
  }
}

/**
 * The plan has IPv6 rules that name IPv6 addresses, and this host has no usable IPv6 netfilter
 * (`reason`: what ip6tables said). The IPv4 family is applied regardless.
 */
export class IPv6UnavailableError extends IptablesError {
  constructor(
    readonly reason: string,
    readonly demand: IPv6Demand,
  ) {
    super(
      6,
      null,
      null,
      `this host has no usable IPv6 netfilter (${reason}), so the plan's ${demand.rules} IPv6 rules are not applied ` +
        `(the first naming an IPv6 address: ${describeRule(demand.first)})`,
    );
    this.name = 'IPv6UnavailableError';
  }
}

/** Thrown inside one IPv6 save or restore whose failure says the family cannot work here. */
class NoIPv6Netfilter extends Error {
  constructor(readonly reason: string) {
    super(`IPv6 netfilter is not usable on this host: ${reason}`);
  }
}

interface Tools {
  backend: IptablesBackend;
  /** iptables, ip6tables (one command a call: a chain listed with its counters). */
  iptables: Record<IPFamily, string>;
  save: Record<IPFamily, string>;
  restore: Record<IPFamily, string>;
}

const families: readonly IPFamily[] = [4, 6];

/**
 * A table no rule has used yet is missing from a full save; `iptables-save -t TABLE` would print
 * just its built-in chains (the same in both families), and restore creates it.
 */
const absentTable: Record<IptablesTable, string> = {
  nat: '*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\nCOMMIT\n',
  filter: '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n',
};

/**
 * Kilo's firewall on Linux: reads with iptables-save, writes one `iptables-restore --noflush`
 * transaction per family, and runs nothing at all when the machine already equals the plan.
 */
export class LinuxFirewallTables implements FirewallTables {
  private tools: Promise<Tools> | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  /** Why IPv6 netfilter is unusable on this host, once an ip6tables command said so; null = usable or not known. */
  private noIPv6: string | null = null;
  private toldSkip = false;

  constructor(
    private readonly exec: Exec,
    private readonly options: {
      backend?: IptablesBackend;
      /** Told once when IPv6 netfilter turns out unusable and the plan's IPv6 part is left out. */
      log?: (line: string) => void;
      /** The WireGuard interface, named by the rule that counts relayed traffic; kilo0 when absent. */
      kiloInterface?: string;
    } = {},
  ) {}

  /**
   * Why this host cannot run IPv6 netfilter, once a reconcile found out (what ip6tables said);
   * null while it can, or before any IPv6 command failed that way.
   */
  ipv6Unavailable(): string | null {
    return this.noIPv6;
  }

  reconcile(firewall: Firewall, options: DiffAgainst<FirewallWritten> = {}): Promise<Ops> {
    // Another backend's state is not this one's to diff against: then read.
    const current = options.current instanceof Map ? options.current : undefined;
    return this.reconcileRules(iptablesRulesOf(firewall, this.options.kiloInterface ?? 'kilo0'), {
      current,
      wrote: options.wrote,
    });
  }

  /**
   * The counters of the rule that counts relayed traffic, from `iptables -S FORWARD -v` of each
   * family (FORWARD alone, not a whole save). Serial with the writes: a read amid one could miss the
   * rule and take its next reading for a new rule's. A family that cannot be listed (no IPv6
   * netfilter) counts nothing; both failing is an error.
   */
  readRelayed(): Promise<RelayedCount | null> {
    return this.serial(async () => {
      const tools = await this.backend();
      const listed = await Promise.allSettled(
        families.map((f) => this.run(f, [tools.iptables[f], '-w', '-t', 'filter', '-S', 'FORWARD', '-v'])),
      );
      if (listed.every((r) => r.status === 'rejected')) throw (listed[0] as PromiseRejectedResult).reason;
      const found = listed.flatMap((r) => (r.status === 'fulfilled' ? [relayedCounters(r.value.stdout)] : []));
      return sumCounts(found);
    });
  }

  /** reconcile() of a firewall already rendered into iptables rules (rules.ts): this backend's own entry. */
  reconcileRules(rules: IptablesRules, options: DiffAgainst<IptablesWritten> = {}): Promise<Ops> {
    return this.serial(() => this.converge(rules, options));
  }

  cleanup(): Promise<Ops> {
    return this.serial(() => this.converge({ chains: [], rules: [] }, {}));
  }

  /** Both families' tables, parsed; a family whose save fails is left out (its reconcile reads, and says why). */
  async read(): Promise<IptablesWritten> {
    const out = new Map<IPFamily, SavedTables>();
    await Promise.all(
      families.map((family) =>
        this.save(family).then(
          (dump) => void out.set(family, parsed(dump)),
          () => {},
        ),
      ),
    );
    return out;
  }

  /** The backend in use and the binaries that go with it. */
  backend(): Promise<Tools> {
    // A failed detection is not remembered: the next reconcile asks again.
    return (this.tools ??= detectTools(this.exec, this.options.backend).catch((e: unknown) => {
      this.tools = null;
      throw e;
    }));
  }

  /**
   * iptables-save of the tables Kilo uses, for one family. One save of everything: with nf_tables
   * `-t TABLE` still fetches the whole ruleset, so a save per table costs a big KILO-NAT twice.
   */
  async save(family: IPFamily): Promise<FamilyDump> {
    const tools = await this.backend();
    const all = (await this.run(family, [tools.save[family]])).stdout;
    const has = (t: IptablesTable) => new RegExp(`^\\*${t}$`, 'm').test(all);
    return { nat: has('nat') ? all : absentTable.nat, filter: has('filter') ? all : absentTable.filter };
  }

  // Two reconciles interleaving their read and write would each undo half of the other.
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => {});
    return next;
  }

  /**
   * A family whose tables `current` holds is diffed against them instead of an iptables-save (which
   * costs as much as the whole table); any other is read. `wrote` is told the tables the restores
   * left, when both families succeeded.
   */
  private async converge(firewall: IptablesRules, options: DiffAgainst<IptablesWritten>): Promise<Ops> {
    const tools = await this.backend();
    const after = new Map<IPFamily, SavedTables>();
    const results = await Promise.allSettled(
      families.map((family) => this.convergeFamily(tools, family, firewall, options.current?.get(family), after)),
    );
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    options.wrote?.(after);
    const details = results.flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
    return { writes: details.length, details };
  }

  /**
   * One family's read, diff and restore. A host without IPv6 netfilter is found out by the first
   * IPv6 save or restore that fails saying so (with legacy iptables and ip6_tables not loaded the
   * save succeeds empty and only the restore tells): from then on a plan whose IPv6 rules name no
   * IPv6 address (see ipv6Demand) runs no IPv6 command at all, and one that does is an error every
   * reconcile, each trying again, so a host given IPv6 netfilter later recovers without a restart.
   * Any other failure is not remembered: the next reconcile tries again as before.
   */
  private async convergeFamily(
    tools: Tools,
    family: IPFamily,
    firewall: IptablesRules,
    remembered: SavedTables | undefined,
    after: Map<IPFamily, SavedTables>,
  ): Promise<string[]> {
    const demand = family === 6 ? ipv6Demand(firewall) : null;
    if (family === 6 && this.noIPv6 !== null && demand === null) return this.skipIPv6(this.noIPv6);
    try {
      const saved = remembered ?? parsed(await this.save(family));
      const batch = renderParsed(family, firewall, saved);
      if (batch.input !== '') await this.restore(tools, batch);
      after.set(family, batch.after);
      if (family === 6) {
        this.noIPv6 = null;
        this.toldSkip = false;
      }
      return batch.changes;
    } catch (e) {
      if (!(e instanceof NoIPv6Netfilter)) throw e;
      this.noIPv6 = e.reason;
      if (demand === null) return this.skipIPv6(e.reason);
      throw new IPv6UnavailableError(e.reason, demand);
    }
  }

  private skipIPv6(reason: string): string[] {
    if (!this.toldSkip) {
      this.toldSkip = true;
      this.options.log?.(
        `IPv6 netfilter is not usable on this host (${reason}); the plan names no IPv6 address, so its IPv6 chains are left out`,
      );
    }
    return [];
  }

  /** exec.run for an iptables tool of `family`; an IPv6 failure that says the family cannot work here becomes NoIPv6Netfilter. */
  private async run(family: IPFamily, argv: string[], opts?: RunOptions) {
    try {
      return await this.exec.run(argv, opts);
    } catch (e) {
      const reason = family === 6 ? ipv6Unusable(e) : null;
      throw reason !== null ? new NoIPv6Netfilter(reason) : e;
    }
  }

  private async restore(tools: Tools, batch: RestoreBatch): Promise<void> {
    const bin = tools.restore[batch.family];
    try {
      // iptables commits table by table: when both change, a dry run first keeps a bad line in
      // the second table from leaving the first one half-updated.
      if (batch.input.split('\nCOMMIT\n').length > 2)
        await this.run(batch.family, [bin, '--noflush', '--test', '-w'], { input: batch.input });
      await this.run(batch.family, [bin, '--noflush', '-w'], { input: batch.input });
    } catch (e) {
      if (!(e instanceof ExecError)) throw e;
      throw restoreError(batch, e);
    }
  }
}

const relayedMark = `--comment ${quote(relayedComment)} `;

/** The counters (`-c PACKETS BYTES`) of the relayed-traffic rules in a `-S FORWARD -v` listing; null: none. */
export function relayedCounters(listing: string): RelayedCount | null {
  const out: RelayedCount[] = [];
  for (const line of listing.split('\n')) {
    if (!line.startsWith('-A FORWARD ') || !line.includes(relayedMark)) continue;
    const m = / -c (\d+) (\d+)/.exec(line);
    if (!m) throw new Error(`cannot read the counters of ${JSON.stringify(line)}`);
    out.push({ packets: Number(m[1]), bytes: Number(m[2]) });
  }
  return sumCounts(out);
}

/** The sum of the counts found; null when none was. */
export function sumCounts(counts: readonly (RelayedCount | null)[]): RelayedCount | null {
  const found = counts.filter((c) => c !== null);
  if (found.length === 0) return null;
  return { packets: found.reduce((n, c) => n + c.packets, 0), bytes: found.reduce((n, c) => n + c.bytes, 0) };
}

const parsed = (dump: FamilyDump): SavedTables => ({
  nat: parseSave(dump.nat, 'nat'),
  filter: parseSave(dump.filter, 'filter'),
});

function restoreError(batch: RestoreBatch, e: ExecError): IptablesError {
  const said = (e.stderr || e.stdout).trim();
  const m = /line:?\s*(\d+)/.exec(said);
  const line = m ? Number(m[1]) : null;
  const lineText = line !== null ? (batch.input.split('\n')[line - 1] ?? null) : null;
  const detail =
    said
      .split('\n')
      .map((l) => l.replace(/^\S*tables\S*(?: v[\d.]+)?(?: \([^)]*\))?:\s*/, '').trim())
      .filter((l) => l !== '' && !/^Error occurred at line|^Try `/.test(l))
      .join('; ') || `exited with ${e.code}`;
  return new IptablesError(batch.family, line, lineText, detail);
}

/**
 * `iptables -V` names the backend the machine's tools use; the `-nft`/`-legacy` binaries are then
 * used for both families, so rules never land in one backend while the other is read.
 */
async function detectTools(exec: Exec, forced?: IptablesBackend): Promise<Tools> {
  let backend = forced;
  if (!backend) {
    const v = (await exec.run(['iptables', '-V'])).stdout;
    backend = v.includes('nf_tables') ? 'nft' : 'legacy';
  }
  const suffix = `-${backend}`;
  let explicit = true;
  try {
    await exec.run([`iptables${suffix}-restore`, '-V']);
  } catch (e) {
    // Old iptables (before 1.8) has no -legacy names: its plain binaries are legacy.
    // (Not found: spawn fails with no exit code; in a namespace nsenter or a shell exits 127.)
    const absent = e instanceof ExecError && !(e instanceof ExecInterrupted) && (e.code === null || e.code === 127);
    if (!absent || backend === 'nft') throw e;
    explicit = false;
  }
  const name = (base: string) => (explicit ? base.replace(/^(ip6?tables)/, `$1${suffix}`) : base);
  return {
    backend,
    iptables: { 4: name('iptables'), 6: name('ip6tables') },
    save: { 4: name('iptables-save'), 6: name('ip6tables-save') },
    restore: { 4: name('iptables-restore'), 6: name('ip6tables-restore') },
  };
}
