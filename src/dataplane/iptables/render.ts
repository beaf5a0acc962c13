import type { IPFamily } from '../../mesh/types.js';
import { editBuiltin, type DesiredRule } from './builtin.js';
import { editOwnChain } from './own-chain.js';
import type { IptablesChain, IptablesRule, IptablesRules, IptablesTable } from './rules.js';
import { parseSave, type SavedChain, type SavedRule, type SavedTable } from './save.js';
import {
  canonicalArgs,
  commentOf,
  isKiloComment,
  joinArgs,
  kiloChainPrefix,
  ruleKey,
  targetOf,
  withComment,
} from './syntax.js';

/**
 * Turns "what the plan wants" and "what iptables-save shows" into one `iptables-restore --noflush`
 * input per family that makes the machine equal the plan: Kilo's chains are edited rule by rule
 * when few rules change, else re-declared and refilled whole; Kilo's jumps in built-in chains are
 * edited one by one, everything without a
 * "Kilo:" comment is left exactly where it is. Equal already → empty input, nothing to run.
 */

export const firewallTables: readonly IptablesTable[] = ['nat', 'filter'];

/** iptables-save dumps of one family, by table. */
export type FamilyDump = Record<IptablesTable, string>;

export interface RestoreBatch {
  family: IPFamily;
  /** The restore input; '' when the machine already equals the plan. */
  input: string;
  /** One line per write: a chain replaced or removed, a jump inserted, appended or deleted. */
  changes: string[];
  /**
   * The tables as they will be once the input is restored: what the next diff can be made
   * against without an iptables-save, as long as nobody else edits the tables meanwhile.
   */
  after: SavedTables;
}

/** Parsed iptables-save tables of one family. */
export type SavedTables = Record<IptablesTable, SavedTable>;

export const familyName = (family: IPFamily) => `IPv${family}`;

export function renderFamily(family: IPFamily, firewall: IptablesRules, dump: FamilyDump): RestoreBatch {
  return renderParsed(family, firewall, {
    nat: parseSave(dump.nat, 'nat'),
    filter: parseSave(dump.filter, 'filter'),
  });
}

/** renderFamily over tables already parsed (or remembered from the last write). */
export function renderParsed(family: IPFamily, firewall: IptablesRules, saved: SavedTables): RestoreBatch {
  const out: string[] = [];
  const changes: string[] = [];
  const after = { ...saved };
  for (const table of firewallTables) {
    const chains = firewall.chains.filter((c) => c.family === family && c.table === table);
    const rules = firewall.rules.filter((r) => r.family === family && r.table === table);
    const t = renderTable(`${familyName(family)} ${table}`, chains, rules, saved[table]);
    if (t.lines.length === 0) continue;
    out.push(`*${table}`, ...t.lines, 'COMMIT');
    changes.push(...t.changes);
    after[table] = t.after;
  }
  return { family, input: out.length ? `${out.join('\n')}\n` : '', changes, after };
}

/** Everything that is Kilo's goes: its jumps out of built-in chains, then its chains. */
export function renderCleanup(family: IPFamily, dump: FamilyDump): RestoreBatch {
  return renderFamily(family, { chains: [], rules: [] }, dump);
}

/** A plan rule as iptables-save would print it back. */
function savedOf(r: DesiredRule): SavedRule {
  const comment = commentOf(r.args);
  return {
    chain: r.chain,
    text: r.text,
    args: r.args,
    key: r.key,
    comment,
    kilo: isKiloComment(comment),
    target: targetOf(r.args),
  };
}

function desired(rule: IptablesRule): DesiredRule {
  const args = canonicalArgs(withComment(rule.args, rule.comment));
  return { chain: rule.chain, args, key: ruleKey(rule.chain, args), text: joinArgs(args), position: rule.position };
}

function renderTable(where: string, chains: IptablesChain[], rules: IptablesRule[], saved: SavedTable) {
  const own = new Set(chains.map((c) => c.name));
  for (const c of own) {
    if (!c.startsWith(kiloChainPrefix))
      throw new Error(
        `${where}: chain ${c} is not named ${kiloChainPrefix}…, so a later run could not find it to remove it`,
      );
  }
  const wanted = rules.map(desired);
  for (const [i, r] of wanted.entries()) {
    const target = targetOf(r.args);
    if (target?.startsWith(kiloChainPrefix) && !own.has(target)) {
      throw new Error(`${where}: rule ${i} in ${r.chain} jumps to ${target}, which the plan does not declare`);
    }
    if (!own.has(r.chain) && !saved.chains.get(r.chain)?.builtin) {
      throw new Error(
        `${where}: rule ${i} is in chain ${r.chain}, which is neither a Kilo chain of the plan nor a built-in chain`,
      );
    }
  }

  const declare: string[] = [];
  const fill: string[] = [];
  const edits: string[] = [];
  const changes: string[] = [];

  for (const name of own) {
    const want = wanted.filter((r) => r.chain === name);
    const have = saved.chains.get(name);
    if (have && sameKeys(have.rules, want)) continue;
    const inPlace = have ? editOwnChain(have, want) : null;
    if (inPlace) {
      fill.push(...inPlace);
      changes.push(...inPlace.map((line) => `${where}: ${line}`));
      continue;
    }
    declare.push(`:${name} - [0:0]`);
    fill.push(...want.map((r) => `-A ${name} ${r.text}`));
    changes.push(
      `${where}: ${have ? 'replace' : 'create'} chain ${name} (${want.length} rules, was ${have?.rules.length ?? 0})`,
    );
  }

  for (const chain of saved.chains.values()) {
    if (!chain.builtin) continue;
    const want = wanted.filter((r) => r.chain === chain.name);
    for (const line of editBuiltin(
      chain,
      want.filter((r) => r.position === 'prepend'),
      want.filter((r) => r.position === 'append'),
    )) {
      edits.push(line);
      changes.push(`${where}: ${line}`);
    }
  }

  // A chain the plan dropped (KILO-IPIP after encapsulation went to never): its jumps were deleted
  // above; a foreign rule still jumping there would make -X fail the whole table, so it stays, empty.
  const stale = [...saved.chains.values()].filter(
    (c) => !c.builtin && c.name.startsWith(kiloChainPrefix) && !own.has(c.name),
  );
  const flush: string[] = [];
  const remove: string[] = [];
  for (const c of stale) {
    const referenced = [...saved.chains.values()].some(
      (o) =>
        !stale.includes(o) && !own.has(o.name) && o.rules.some((r) => r.target === c.name && !(o.builtin && r.kilo)),
    );
    if (c.rules.length > 0) {
      flush.push(`-F ${c.name}`);
      changes.push(`${where}: flush chain ${c.name} (${c.rules.length} rules)`);
    }
    if (!referenced) {
      remove.push(`-X ${c.name}`);
      changes.push(`${where}: remove chain ${c.name}`);
    }
  }
  const lines = [...declare, ...fill, ...edits, ...flush, ...remove];
  // The table once the lines are restored, exact by construction: Kilo's chains hold the plan's
  // rules; a built-in chain holds the prepend jumps, its foreign rules, the append jumps (what
  // editBuiltin leaves); stale chains are empty or gone.
  const after = new Map<string, SavedChain>();
  for (const chain of saved.chains.values()) {
    if (stale.includes(chain)) {
      if (!remove.includes(`-X ${chain.name}`)) after.set(chain.name, { ...chain, rules: [] });
      continue;
    }
    if (!chain.builtin || own.has(chain.name)) {
      after.set(chain.name, chain);
      continue;
    }
    const want = wanted.filter((r) => r.chain === chain.name);
    const rulesAfter = [
      ...want.filter((r) => r.position === 'prepend').map(savedOf),
      ...chain.rules.filter((r) => !r.kilo),
      ...want.filter((r) => r.position === 'append').map(savedOf),
    ];
    after.set(chain.name, { ...chain, rules: rulesAfter });
  }
  for (const name of own)
    after.set(name, { name, builtin: false, rules: wanted.filter((r) => r.chain === name).map(savedOf) });
  return { lines, changes, after: { chains: after } };
}

function sameKeys(have: readonly SavedRule[], want: readonly DesiredRule[]): boolean {
  return have.length === want.length && have.every((r, i) => r.key === want[i]!.key);
}
