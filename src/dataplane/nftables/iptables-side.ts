import type { Firewall, IPFamily } from '../../mesh/types.js';
import { ExecError, ExecInterrupted, type Exec } from '../exec.js';
import { iptablesRulesOf, type IptablesRules } from '../iptables/rules.js';
import { LinuxFirewallTables } from '../iptables/tables.js';
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

/** The filter chains whose policy is DROP, from an iptables-save dump of one family. */
export function dropPoliciesOf(dump: string): Set<Hook> {
  const out = new Set<Hook>();
  let filter = false;
  for (const line of dump.split('\n')) {
    if (line.startsWith('*')) filter = line === '*filter';
    const m = filter ? /^:(INPUT|FORWARD) DROP\b/.exec(line) : null;
    if (m) out.add(m[1] as Hook);
  }
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
    rules: all.rules.filter((r) => kept(r.family, r.table, r.chain)),
  };
}

const notFound = (e: unknown) =>
  e instanceof ExecError && !(e instanceof ExecInterrupted) && (e.code === null || e.code === 127);

export class IptablesSide {
  private readonly tables: LinuxFirewallTables;
  /** The last iptables-save of each family the tables took (none when they trusted their memory). */
  private dumps = new Map<IPFamily, string>();
  private drop: DropPolicies = none();
  /** No iptables on this host: nothing of Kilo's can be there, and no policy to work around. */
  private absent = false;

  constructor(
    exec: Exec,
    private readonly log?: (line: string) => void,
  ) {
    const watched: Exec = {
      ...exec,
      run: async (argv, opts) => {
        const r = await exec.run(argv, opts);
        const m = /(ip6?)tables(?:-\w+)?-save$/.exec(argv[0] ?? '');
        if (m) this.dumps.set(m[1] === 'ip6' ? 6 : 4, r.stdout);
        return r;
      },
    };
    this.tables = new LinuxFirewallTables(watched, log ? { log } : {});
  }

  /** The filter hooks whose iptables policy is DROP, per family, as the last read found them. */
  dropPolicies(): DropPolicies {
    return this.drop;
  }

  /**
   * Kilo's iptables as the policies call for; `current`: what the last write left (not read then,
   * and a policy changed since is seen at the next pass that reads). Resolves to the writes and what
   * they left; null when the host has no iptables.
   */
  async reconcile(
    fw: Firewall,
    current: IptablesWritten | undefined,
  ): Promise<{ details: string[]; after: IptablesWritten } | null> {
    if (this.absent) return null;
    this.dumps.clear();
    let after: IptablesWritten | undefined;
    const wrote = (a: IptablesWritten) => (after = a);
    const first = await this.attempt(() =>
      this.tables.reconcileRules(iptablesCompanionOf(fw, this.drop), { current, wrote }),
    );
    if (first === null) return null;
    const seen = this.seenPolicies();
    if (seen === null || same(seen, this.drop)) return { details: first.details, after: after! };
    // The policy changed since the last pass (Docker started): write what the new one calls for.
    this.drop = seen;
    for (const f of [4, 6] as const)
      if (seen[f].size > 0)
        this.log?.(
          `IPv${f} iptables ${[...seen[f]].join(' and ')} policy is DROP: Kilo's accepts for ${seen[f].size > 1 ? 'them' : 'it'} are also written into iptables`,
        );
    const second = await this.tables.reconcileRules(iptablesCompanionOf(fw, seen), { wrote });
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

  private seenPolicies(): DropPolicies | null {
    if (this.dumps.size === 0) return null;
    const out = none();
    for (const f of [4, 6] as const) {
      const d = this.dumps.get(f);
      out[f] = d === undefined ? this.drop[f] : dropPoliciesOf(d);
    }
    return out;
  }
}

const same = (a: DropPolicies, b: DropPolicies) =>
  ([4, 6] as const).every((f) => a[f].size === b[f].size && [...a[f]].every((h) => b[f].has(h)));
