import type { Firewall } from '../../mesh/types.js';
import { ExecError, ExecInterrupted, type Exec } from '../exec.js';
import type { DiffAgainst, FirewallTables, FirewallWritten, NftablesWritten, Ops, RelayedCount } from '../types.js';
import { IptablesSide } from './iptables-side.js';
import { countersOf, parseTable } from './json.js';
import { nftFamily, nftRulesetOf, nftTable, relayedChain, type NftRuleset } from './ruleset.js';
import { nftScript } from './script.js';

/** nft refused a transaction, or the table cannot be Kilo's; nothing of that transaction was applied. */
export class NftablesError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NftablesError';
  }
}

/** This host cannot run the nftables backend: no `nft`, or a kernel without nf_tables. */
export class NftablesUnavailableError extends NftablesError {
  constructor(readonly reason: string) {
    super(`nftables is not usable on this host: ${reason}; run with --firewall=iptables`);
    this.name = 'NftablesUnavailableError';
  }
}

/** A table `inet kilo` exists that Kilo did not write: Kilo neither changes nor removes it. */
export class ForeignTableError extends NftablesError {
  constructor(readonly reason: string) {
    super(
      `the nftables table ${nftFamily} ${nftTable} is not Kilo's (${reason}): remove or rename it, or run with --firewall=iptables`,
    );
    this.name = 'ForeignTableError';
  }
}

/** What `nft` printed, in one line, without its caret lines. */
function said(e: ExecError): string {
  return (
    (e.stderr || e.stdout)
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !/^[\s^~]+$/.test(l))
      .join('; ') || `exited with ${e.code}`
  );
}

/** An nft failure that says this host cannot run nftables at all; null for any other. */
export function nftUnusable(e: unknown): string | null {
  if (!(e instanceof ExecError) || e instanceof ExecInterrupted) return null;
  if (e.code === null || e.code === 127) return 'the nft command is not installed';
  const text = said(e);
  if (/Operation not supported|Protocol not supported|Address family not supported/i.test(text))
    return `the kernel has no nf_tables (nft said: ${text})`;
  return null;
}

/**
 * Kilo's table as the machine has it: null when there is none. @throws ForeignTableError when a
 * table of that name is someone else's, NftablesUnavailableError when nft cannot run here.
 */
export async function readKiloTable(exec: Exec): Promise<NftRuleset | null> {
  let text: string;
  try {
    text = (await exec.run(['nft', '-j', 'list', 'table', nftFamily, nftTable])).stdout;
  } catch (e) {
    const unusable = nftUnusable(e);
    if (unusable !== null) throw new NftablesUnavailableError(unusable);
    if (e instanceof ExecError && /No such file or directory/.test(said(e))) return null;
    throw e instanceof ExecError ? new NftablesError(`nft -j list table ${nftFamily} ${nftTable}: ${said(e)}`) : e;
  }
  const read = parseTable(text);
  if (read.foreign !== null) throw new ForeignTableError(read.foreign);
  return read.ruleset;
}

/** Runs one `nft -f` transaction. */
async function runScript(exec: Exec, text: string): Promise<void> {
  try {
    await exec.run(['nft', '-f', '-'], { input: text });
  } catch (e) {
    const unusable = nftUnusable(e);
    if (unusable !== null) throw new NftablesUnavailableError(unusable);
    if (!(e instanceof ExecError)) throw e;
    throw new NftablesError(`nftables transaction refused, nothing of it applied: ${said(e)}`);
  }
}

/** Removes Kilo's table whole, if there is one; a foreign table of that name is left alone. */
export async function removeKiloTable(exec: Exec): Promise<string[]> {
  const table = await readKiloTable(exec);
  if (table === null) return [];
  await runScript(exec, `delete table ${nftFamily} ${nftTable}\n`);
  return [`nftables: remove table ${nftFamily} ${nftTable}`];
}

/**
 * Kilo's firewall in its own nftables table: read with `nft -j list table`, diffed, written as one
 * `nft -f` transaction, nothing run when the table already equals the plan; removed whole on
 * clean-up. Kilo's iptables are kept to what the host's iptables policies call for (IptablesSide).
 */
export class LinuxNftablesTables implements FirewallTables {
  private queue: Promise<unknown> = Promise.resolve();
  private readonly iptables: IptablesSide | null;
  private readonly kiloInterface: string;

  constructor(
    private readonly exec: Exec,
    options: {
      log?: (line: string) => void;
      /** false: leave iptables alone (tests of the nftables part only). */
      iptables?: boolean;
      /** The WireGuard interface, named by the rule that counts relayed traffic; kilo0 when absent. */
      kiloInterface?: string;
    } = {},
  ) {
    this.kiloInterface = options.kiloInterface ?? 'kilo0';
    this.iptables = options.iptables === false ? null : new IptablesSide(exec, options.log);
  }

  /**
   * Kilo's table and iptables as reconcile diffs against them (what ReadAhead starts early). Rejects
   * as reconcile would when the table cannot be Kilo's or nft cannot run (the reconcile then reads,
   * and says why); a family iptables cannot read is left out (its reconcile reads it).
   */
  async read(): Promise<NftablesWritten> {
    const [table, iptables] = await Promise.all([readKiloTable(this.exec), this.iptables?.read() ?? null]);
    return { table, iptables };
  }

  /**
   * `options.current`, when it is this backend's (NftablesWritten), stands for Kilo's table and
   * iptables as they are (neither is read); `wrote` is told what both left, when both succeeded.
   */
  reconcile(firewall: Firewall, options: DiffAgainst<FirewallWritten> = {}): Promise<Ops> {
    const current = isNftablesWritten(options.current) ? options.current : undefined;
    return this.serial(async () => {
      const want = nftRulesetOf(firewall, this.kiloInterface);
      // Kilo's table is read before iptables is touched: a host where it cannot be Kilo's (no nft,
      // no nf_tables, a foreign table) gets nothing written, in iptables either.
      const table = current ? current.table : await readKiloTable(this.exec);
      const [nft, ipt] = await Promise.allSettled([
        this.converge(want, table),
        this.iptables?.reconcile(firewall, current?.iptables ?? undefined) ?? Promise.resolve(null),
      ]);
      if (nft.status === 'rejected') throw nft.reason;
      if (ipt.status === 'rejected') throw ipt.reason;
      options.wrote?.({ table: want, iptables: ipt.value?.after ?? null });
      const details = [...nft.value, ...(ipt.value?.details ?? [])];
      return { writes: details.length, details };
    });
  }

  /**
   * The counter of Kilo's `relayed` chain, from `nft -j list chain` (that chain alone); null when
   * the chain, or the table, is not there. Serial with the writes, as the iptables backend's.
   */
  readRelayed(): Promise<RelayedCount | null> {
    return this.serial(async () => {
      try {
        const listed = await this.exec.run(['nft', '-j', 'list', 'chain', nftFamily, nftTable, relayedChain]);
        return countersOf(listed.stdout, relayedChain);
      } catch (e) {
        const unusable = nftUnusable(e);
        if (unusable !== null) throw new NftablesUnavailableError(unusable);
        if (e instanceof ExecError && /No such file or directory/.test(said(e))) return null;
        throw e;
      }
    });
  }

  cleanup(): Promise<Ops> {
    return this.serial(async () => {
      const details = [...(await removeKiloTable(this.exec)), ...((await this.iptables?.cleanup()) ?? [])];
      return { writes: details.length, details };
    });
  }

  private async converge(want: NftRuleset, current: NftRuleset | null): Promise<string[]> {
    const script = nftScript(want, current);
    if (script.text !== '') await runScript(this.exec, script.text);
    return script.changes;
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => {});
    return next;
  }
}

function isNftablesWritten(w: FirewallWritten | undefined): w is NftablesWritten {
  return w !== undefined && !(w instanceof Map);
}
