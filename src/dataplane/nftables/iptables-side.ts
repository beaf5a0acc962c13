import type { Firewall, IPFamily } from '../../mesh/types.js';
import { ExecError, ExecInterrupted, type Exec } from '../exec.js';
import { iptablesRulesOf, relayedComment, type IptablesRules } from '../iptables/rules.js';
import { LinuxFirewallTables } from '../iptables/tables.js';
import type { SavedTables } from '../iptables/render.js';
import type { IptablesWritten } from '../types.js';

/**
 * What the nftables backend still does in iptables. An nftables `accept` ends only its own base
 * chain: a packet Kilo's table accepts still meets iptables' FORWARD and INPUT, and where their
 * policy is DROP (Docker sets FORWARD so) it is dropped. So where a filter chain's policy is DROP,
 * Kilo's accepts for that hook are also written into iptables, exactly as the iptables backend
 * writes them (its FORWARD accepts; its KILO-IPIP chain and INPUT jumps); everywhere else Kilo
 * has nothing in iptables, and a node that ran the iptables backend loses its KILO- chains and
 * jumps at the first pass. A host with no iptables at all has nothing there: this side then does
 * nothing.
 */

type Hook = 'INPUT' | 'FORWARD';
export type DropPolicies = Record<IPFamily, Set<Hook>>;

const none = (): DropPolicies => ({ 4: new Set(), 6: new Set() });

/** The filter chains whose policy is DROP, from one family's tables as read (or as the last write left them). */
export function dropPoliciesOf(tables: SavedTables): Set<Hook> {
  const out = new Set<Hook>();
  for (const hook of ['INPUT', 'FORWARD'] as const)
    if (tables.filter.chains.get(hook)?.policy === 'DROP') out.add(hook);
  return out;
}

/** Kilo's iptables rules for the hooks whose policy is DROP: none when no policy drops. */
export function iptablesCompanionOf(fw: Firewall, drop: DropPolicies): IptablesRules {
  const all = iptablesRulesOf(fw);
  const hookOf = (chain: string): Hook | null =>
    chain === 'FORWARD' ? 'FORWARD' : chain === 'INPUT' || chain === 'KILO-IPIP' ? 'INPUT' : null;
  const kept = (family: IPFamily, table: string, chain: string) => {
    const hook = hookOf(chain);
    return table === 'filter' && hook !== null && drop[family].has(hook);
  };
  return {
    chains: all.chains.filter((c) => kept(c.family, c.table, c.name)),
    // What a relay forwards is counted in Kilo's table (ruleset.ts), not twice.
    rules: all.rules.filter((r) => kept(r.family, r.table, r.chain) && r.comment !== relayedComment),
  };
}

const notFound = (e: unknown) =>
  e instanceof ExecError && !(e instanceof ExecInterrupted) && (e.code === null || e.code === 127);

export class IptablesSide {
  private readonly tables: LinuxFirewallTables;
  /** The filter hooks whose policy is DROP, per family, as the last read (or write) found them. */
  private drop: DropPolicies = none();
  /** No iptables on this host: nothing of Kilo's can be there, and no policy to work around. */
  private absent = false;

  constructor(
    exec: Exec,
    private readonly log?: (line: string) => void,
  ) {
    this.tables = new LinuxFirewallTables(exec, log ? { log } : {});
  }

  /** The filter hooks whose iptables policy is DROP, per family, as the last read found them. */
  dropPolicies(): DropPolicies {
    return this.drop;
  }

  /** Both families' tables as reconcile diffs against them (a family that cannot be read is left out); null: no iptables here. */
  async read(): Promise<IptablesWritten | null> {
    if (this.absent) return null;
    return this.tables.read();
  }

  /**
   * Kilo's iptables as the policies call for; `current`: the tables as read ahead, or as the last
   * write left them (not read then, and a policy changed since is seen at the next pass that
   * reads). Resolves to the writes and what they left; null when the host has no iptables.
   */
  async reconcile(
    fw: Firewall,
    current: IptablesWritten | undefined,
  ): Promise<{ details: string[]; after: IptablesWritten } | null> {
    if (this.absent) return null;
    let after: IptablesWritten | undefined;
    const wrote = (a: IptablesWritten) => (after = a);
    const drop = current ? this.policiesOf(current) : this.drop;
    const first = await this.attempt(() =>
      this.tables.reconcileRules(iptablesCompanionOf(fw, drop), { current, wrote }),
    );
    if (first === null) return null;
    const seen = this.policiesOf(after!);
    if (same(seen, drop)) return { details: first.details, after: after! };
    // A family read during the pass has other policies (Docker started): write what they call for.
    const second = await this.tables.reconcileRules(iptablesCompanionOf(fw, seen), { current: after!, wrote });
    return { details: [...first.details, ...second.details], after: after! };
  }

  async cleanup(): Promise<string[]> {
    if (this.absent) return [];
    return (await this.attempt(() => this.tables.cleanup()))?.details ?? [];
  }

  private async attempt<T>(fn: () => Promise<T>): Promise<T | null> {
    try {
      return await fn();
    } catch (e) {
      if (!notFound(e)) throw e;
      this.absent = true;
      return null;
    }
  }

  /** The DROP policies `tables` show (a family they lack keeps what was known); remembered, and said when they changed. */
  private policiesOf(tables: IptablesWritten): DropPolicies {
    const seen = none();
    for (const f of [4, 6] as const) {
      const t = tables.get(f);
      seen[f] = t === undefined ? this.drop[f] : dropPoliciesOf(t);
    }
    if (same(seen, this.drop)) return this.drop;
    this.drop = seen;
    for (const f of [4, 6] as const)
      if (seen[f].size > 0)
        this.log?.(
          `IPv${f} iptables ${[...seen[f]].join(' and ')} policy is DROP: Kilo's accepts for ${seen[f].size > 1 ? 'them' : 'it'} are also written into iptables`,
        );
    return seen;
  }
}

const same = (a: DropPolicies, b: DropPolicies) =>
  ([4, 6] as const).every((f) => a[f].size === b[f].size && [...a[f]].every((h) => b[f].has(h)));
