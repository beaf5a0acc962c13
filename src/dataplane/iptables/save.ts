import { commentOf, isKiloComment, ruleKey, targetOf, tokenize } from './syntax.js';

/** One rule as iptables-save printed it. */
export interface SavedRule {
  chain: string;
  /** The arguments after `-A CHAIN`, as printed: restorable as they are (for `-D`). */
  text: string;
  args: string[];
  key: string;
  comment: string | null;
  /** Carries a "Kilo:" comment: the only rules Kilo may delete. */
  kilo: boolean;
  /** The chain it jumps or goes to, if any. */
  target: string | null;
}

export interface SavedChain {
  name: string;
  /** Built-in chains have a policy; user chains print "-". */
  builtin: boolean;
  /** A built-in chain's policy as the dump printed it (ACCEPT, DROP). */
  policy?: string;
  rules: SavedRule[];
}

/** One table of an iptables-save dump; chains keep the dump's order. */
export interface SavedTable {
  chains: Map<string, SavedChain>;
}

/**
 * Reads the `*TABLE` section of an iptables-save dump (`iptables-save -t TABLE` prints only that
 * one). A table that is absent reads as empty.
 */
export function parseSave(dump: string, table: string): SavedTable {
  const chains = new Map<string, SavedChain>();
  let inTable = false;
  for (const raw of dump.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    if (line.startsWith('*')) {
      inTable = line.slice(1) === table;
      continue;
    }
    if (!inTable) continue;
    if (line === 'COMMIT') {
      inTable = false;
      continue;
    }
    if (line.startsWith(':')) {
      const [name, policy] = line.slice(1).split(/\s+/);
      if (name)
        chains.set(name, {
          name,
          builtin: policy !== '-',
          ...(policy !== undefined && policy !== '-' ? { policy } : {}),
          rules: [],
        });
      continue;
    }
    const m = /^-A\s+(\S+)\s*(.*)$/.exec(line);
    if (!m) throw new Error(`cannot read iptables-save line ${JSON.stringify(line)} in table ${table}`);
    const chain = m[1]!;
    const text = m[2]!;
    const args = tokenize(text);
    const comment = commentOf(args);
    let c = chains.get(chain);
    if (!c) chains.set(chain, (c = { name: chain, builtin: false, rules: [] }));
    c.rules.push({
      chain,
      text,
      args,
      key: ruleKey(chain, args),
      comment,
      kilo: isKiloComment(comment),
      target: targetOf(args),
    });
  }
  return { chains };
}
