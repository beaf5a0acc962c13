import type { Firewall, FirewallTable, IPFamily } from '../../mesh/types.js';
import { ExecError, type Exec } from '../exec.js';
import type { FirewallTables, Ops, ReconcileOptions } from '../types.js';
import { familyName, renderParsed, type FamilyDump, type RestoreBatch, type SavedTables } from './render.js';
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

interface Tools {
  backend: IptablesBackend;
  save: Record<IPFamily, string>;
  restore: Record<IPFamily, string>;
}

const families: readonly IPFamily[] = [4, 6];

/**
 * A table no rule has used yet is missing from a full save; `iptables-save -t TABLE` would print
 * just its built-in chains (the same in both families), and restore creates it.
 */
const absentTable: Record<FirewallTable, string> = {
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
  /** Per family, the tables as the last read or exactly-known write left them; dropped on doubt. */
  private known = new Map<IPFamily, SavedTables>();

  constructor(
    private readonly exec: Exec,
    private readonly options: { backend?: IptablesBackend } = {},
  ) {}

  reconcile(firewall: Firewall, options: ReconcileOptions = {}): Promise<Ops> {
    return this.serial(() => this.converge(firewall, options.trustLastWrite === true));
  }

  cleanup(): Promise<Ops> {
    return this.serial(() => this.converge({ chains: [], rules: [] }, false));
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
  async read(family: IPFamily): Promise<FamilyDump> {
    const tools = await this.backend();
    const all = (await this.exec.run([tools.save[family]])).stdout;
    const has = (t: FirewallTable) => new RegExp(`^\\*${t}$`, 'm').test(all);
    return { nat: has('nat') ? all : absentTable.nat, filter: has('filter') ? all : absentTable.filter };
  }

  // Two reconciles interleaving their read and write would each undo half of the other.
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => {});
    return next;
  }

  /**
   * With `trust`, a family whose tables are known from the last write is diffed against that memory
   * instead of an iptables-save (which costs as much as the whole table); without, it is read.
   * Whatever goes wrong, the memory of that family is dropped.
   */
  private async converge(firewall: Firewall, trust: boolean): Promise<Ops> {
    const tools = await this.backend();
    const results = await Promise.allSettled(
      families.map(async (family) => {
        const remembered = trust ? this.known.get(family) : undefined;
        this.known.delete(family);
        const saved = remembered ?? parsed(await this.read(family));
        const batch = renderParsed(family, firewall, saved);
        if (batch.input !== '') await this.restore(tools, batch);
        this.known.set(family, batch.after);
        return batch.changes;
      }),
    );
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    const details = results.flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
    return { writes: details.length, details };
  }

  private async restore(tools: Tools, batch: RestoreBatch): Promise<void> {
    const bin = tools.restore[batch.family];
    try {
      // iptables commits table by table: when both change, a dry run first keeps a bad line in
      // the second table from leaving the first one half-updated.
      if (batch.input.split('\nCOMMIT\n').length > 2)
        await this.exec.run([bin, '--noflush', '--test', '-w'], { input: batch.input });
      await this.exec.run([bin, '--noflush', '-w'], { input: batch.input });
    } catch (e) {
      if (!(e instanceof ExecError)) throw e;
      throw restoreError(batch, e);
    }
  }
}

const parsed = (dump: FamilyDump): SavedTables => ({ nat: parseSave(dump.nat, 'nat'), filter: parseSave(dump.filter, 'filter') });

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
    // (Not found: spawn fails with no exit code, or a shell in a namespace exits 127.)
    if (!(e instanceof ExecError) || (e.code !== null && e.code !== 127) || backend === 'nft') throw e;
    explicit = false;
  }
  const name = (base: string) => (explicit ? base.replace(/^(ip6?tables)/, `$1${suffix}`) : base);
  return {
    backend,
    save: { 4: name('iptables-save'), 6: name('ip6tables-save') },
    restore: { 4: name('iptables-restore'), 6: name('ip6tables-restore') },
  };
}
