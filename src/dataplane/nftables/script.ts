import { baseText, nftFamily, nftTable, type NftChain, type NftRuleset, type NftSet } from './ruleset.js';

/**
 * Turns "what the plan wants" and "what `nft -j list table` shows" into one `nft -f` script that
 * makes Kilo's table equal the plan, run as one transaction: the kernel applies all of it or none.
 * Sets are edited element by element (a node leaving is a few deletes), a chain whose rules differ
 * is flushed and refilled (Kilo's chains hold a handful of rules), what the plan no longer has is
 * deleted. Equal already: an empty script, nothing to run.
 */

export interface NftScript {
  /** The `nft -f` input; '' when the table already equals the plan. */
  text: string;
  /** One line per write: the table created, a set's elements changed, a chain refilled or removed. */
  changes: string[];
}

const where = `${nftFamily} ${nftTable}`;
const baseKey = (c: NftChain) => JSON.stringify(c.base);

function declareSet(s: NftSet): string {
  return `add set ${where} ${s.name} { type ${s.type}; flags interval; }`;
}

function declareChain(c: NftChain): string {
  return c.base ? `add chain ${where} ${c.name} { ${baseText(c.base)} }` : `add chain ${where} ${c.name}`;
}

/** `add element` / `delete element` lines, a few thousand elements per line. */
function elementLines(verb: 'add' | 'delete', set: string, elements: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < elements.length; i += 2000)
    out.push(`${verb} element ${where} ${set} { ${elements.slice(i, i + 2000).join(', ')} }`);
  return out;
}

const rulesOf = (c: NftChain) => c.rules.map((r) => `add rule ${where} ${c.name} ${r}`);

/** The script that makes the table (absent when `current` is null) equal `want`. */
export function nftScript(want: NftRuleset, current: NftRuleset | null): NftScript {
  const lines: string[] = [];
  const changes: string[] = [];
  if (current === null) {
    lines.push(`add table ${where}`);
    for (const s of want.sets) lines.push(declareSet(s), ...elementLines('add', s.name, s.elements));
    for (const c of want.chains) lines.push(declareChain(c));
    for (const c of want.chains) lines.push(...rulesOf(c));
    const elements = want.sets.reduce((n, s) => n + s.elements.length, 0);
    const rules = want.chains.reduce((n, c) => n + c.rules.length, 0);
    changes.push(
      `nftables: create table ${where} (${want.sets.length} sets, ${elements} elements, ${want.chains.length} chains, ${rules} rules)`,
    );
    return { text: `${lines.join('\n')}\n`, changes };
  }

  const haveSets = new Map(current.sets.map((s) => [s.name, s]));
  const haveChains = new Map(current.chains.map((c) => [c.name, c]));
  const wantSets = new Set(want.sets.map((s) => s.name));
  const wantChains = new Map(want.chains.map((c) => [c.name, c]));

  // First empty every chain that goes or changes, so that nothing still refers to a set or chain
  // deleted below; then delete, then declare and fill.
  // A set of the table that is not one of the plan's (another type, elements that are no prefix)
  // is deleted: the rules that could refer to it are all refilled.
  const doomedSets = current.sets.filter((s) => {
    const w = want.sets.find((x) => x.name === s.name);
    return !w || w.type !== s.type || s.elements.some((e) => !/^[\da-f.:]+\/\d+$/.test(e));
  });
  const recreated = doomedSets.some((s) => wantSets.has(s.name));
  const refill = want.chains.filter((c) => {
    const have = haveChains.get(c.name);
    return recreated || !have || baseKey(have) !== baseKey(c) || !sameList(have.rules, c.rules);
  });
  const doomedChains = current.chains.filter((c) => {
    const w = wantChains.get(c.name);
    return !w || baseKey(w) !== baseKey(c);
  });
  for (const c of [...doomedChains, ...refill.filter((c) => haveChains.has(c.name))]) {
    if (!lines.includes(`flush chain ${where} ${c.name}`) && (haveChains.get(c.name)?.rules.length ?? 0) > 0)
      lines.push(`flush chain ${where} ${c.name}`);
  }
  for (const c of doomedChains) {
    lines.push(`delete chain ${where} ${c.name}`);
    if (!wantChains.has(c.name)) changes.push(`nftables: remove chain ${c.name} (${c.rules.length} rules)`);
  }
  const setEdits: string[] = [];
  for (const s of doomedSets) {
    lines.push(`delete set ${where} ${s.name}`);
    if (!wantSets.has(s.name)) changes.push(`nftables: remove set ${s.name} (${s.elements.length} elements)`);
    haveSets.delete(s.name);
  }
  for (const s of want.sets) {
    const have = haveSets.get(s.name);
    if (!have) {
      setEdits.push(declareSet(s), ...elementLines('add', s.name, s.elements));
      changes.push(`nftables: create set ${s.name} (${s.elements.length} elements)`);
      continue;
    }
    const had = new Set(have.elements);
    const wanted = new Set(s.elements);
    const gone = have.elements.filter((e) => !wanted.has(e));
    const added = s.elements.filter((e) => !had.has(e));
    if (gone.length === 0 && added.length === 0) continue;
    // Deletes before adds: a prefix that grows (a /24 to its /23) must not overlap itself.
    setEdits.push(...elementLines('delete', s.name, gone), ...elementLines('add', s.name, added));
    changes.push(`nftables: set ${s.name}: ${added.length} elements added, ${gone.length} deleted`);
  }
  lines.push(...setEdits);
  for (const c of want.chains) {
    const have = haveChains.get(c.name);
    if (!have || doomedChains.includes(have)) lines.push(declareChain(c));
  }
  for (const c of refill) {
    lines.push(...rulesOf(c));
    const have = haveChains.get(c.name);
    changes.push(
      have
        ? `nftables: ${baseKey(have) !== baseKey(c) ? 'replace' : 'refill'} chain ${c.name} (${c.rules.length} rules, was ${have.rules.length})`
        : `nftables: create chain ${c.name} (${c.rules.length} rules)`,
    );
  }
  return { text: lines.length ? `${lines.join('\n')}\n` : '', changes };
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
