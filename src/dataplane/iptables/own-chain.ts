import type { DesiredRule } from './builtin.js';
import { commonSubsequence } from './builtin.js';
import type { SavedChain } from './save.js';

/**
 * Edits that turn one of Kilo's chains, as saved, into `want` rule by rule: deletes of the rules
 * that went, inserts of the new ones at their place: a short restore where re-declaring a big chain
 * would rewrite every rule (docs/performance.md#kilo-nat-aggregation). Returns null when replacing the
 * chain whole is as cheap (most rules change) or the edit cannot be made exact (a rule to delete
 * has an identical twin, and `-D` removes the first copy).
 */
export function editOwnChain(chain: SavedChain, want: readonly DesiredRule[]): string[] | null {
  // Everything in Kilo's chain is Kilo's, commented or not: mark it so for the subsequence.
  const have = chain.rules.map((r) => ({ ...r, kilo: true }));
  const pairs = commonSubsequence(have, want);
  const keptHave = new Set(pairs.map(([h]) => h));
  const keptWant = new Set(pairs.map(([, w]) => w));
  const doomed = have.flatMap((r, i) => (keptHave.has(i) ? [] : [r]));
  const edits = doomed.length + want.length - keptWant.size;
  if (edits >= want.length) return null;

  const copies = new Map<string, number>();
  for (const r of have) copies.set(r.key, (copies.get(r.key) ?? 0) + 1);
  if (doomed.some((r) => copies.get(r.key)! > 1)) return null;

  const lines = doomed.map((r) => `-D ${chain.name} ${r.text}`);
  // After the deletes the kept rules are in plan order; inserting the missing ones in plan order
  // at their final position leaves every earlier position already filled.
  let length = have.length - doomed.length;
  want.forEach((r, j) => {
    if (keptWant.has(j)) return;
    lines.push(j + 1 > length ? `-A ${chain.name} ${r.text}` : `-I ${chain.name} ${j + 1} ${r.text}`);
    length++;
  });
  return lines;
}
