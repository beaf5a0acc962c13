import type { IptablesRule } from './rules.js';
import type { SavedChain, SavedRule } from './save.js';

/** A plan rule in restore form. */
export interface DesiredRule {
  chain: string;
  args: string[];
  key: string;
  /** The arguments after `-A CHAIN`, as iptables-save prints them. */
  text: string;
  position: IptablesRule['position'];
}

/**
 * Edits that leave a built-in chain as: the prepend jumps (plan order), the foreign rules (their
 * order), the append jumps (plan order), each Kilo rule exactly once, and that keep every Kilo
 * rule already in its place (a node leaving the middle of FORWARD costs two deletes, not a
 * rebuild). Deletes go by rule text, never by number, so a rule another program inserted in the
 * meantime can never be hit; only insert positions depend on the dump being current.
 */
export function editBuiltin(
  chain: SavedChain,
  prepend: readonly DesiredRule[],
  append: readonly DesiredRule[],
): string[] {
  const have = chain.rules;
  const foreignAt = have.flatMap((r, i) => (r.kilo ? [] : [i]));
  const exact = [...prepend, ...foreignAt.map((i) => have[i]!), ...append].map((r) => r.key);
  if (exact.length === have.length && have.every((r, i) => r.key === exact[i])) return [];

  // Kilo rules between foreign ones are never in place; the run before the first foreign rule is
  // matched against the prepend jumps, the run after the last against the append jumps. Without
  // foreign rules the one run is matched against both, in order.
  const firstForeign = foreignAt[0] ?? have.length;
  const lastForeign = foreignAt.at(-1) ?? have.length;
  const headHave = have.slice(0, firstForeign);
  const headWant = foreignAt.length ? prepend : [...prepend, ...append];
  const tailWant = foreignAt.length ? append : [];
  const tailHave = foreignAt.length ? have.slice(lastForeign + 1) : [];
  const tailStart = foreignAt.length ? lastForeign + 1 : have.length;

  const headPairs = commonSubsequence(headHave, headWant);
  const tailPairs = commonSubsequence(tailHave, tailWant);
  const kept = new Set([...headPairs.map(([h]) => h), ...tailPairs.map(([h]) => tailStart + h)]);
  let doomed = have.flatMap((r, i) => (r.kilo && !kept.has(i) ? [i] : []));
  let headMatched = new Set(headPairs.map(([, w]) => w));
  let tailMatched = new Set(tailPairs.map(([, w]) => w));

  // `-D` by text removes the first rule with that text: if that would be a kept copy, rebuild.
  if (!deletesHitOnlyDoomed(have, doomed)) {
    doomed = have.flatMap((r, i) => (r.kilo ? [i] : []));
    headMatched = new Set();
    tailMatched = new Set();
  }
  const lines = doomed.map((i) => `-D ${chain.name} ${have[i]!.text}`);

  let length = have.length - doomed.length;
  headWant.forEach((r, i) => {
    if (headMatched.has(i)) return;
    lines.push(i + 1 > length ? `-A ${chain.name} ${r.text}` : `-I ${chain.name} ${i + 1} ${r.text}`);
    length++;
  });
  // Missing append jumps go before the kept ones that follow them in plan order.
  const tailBase = length - tailMatched.size;
  tailWant.forEach((r, j) => {
    if (tailMatched.has(j)) return;
    const at = tailBase + j + 1;
    lines.push(at > length ? `-A ${chain.name} ${r.text}` : `-I ${chain.name} ${at} ${r.text}`);
    length++;
  });
  return lines;
}

const maxTableCells = 4_000_000;

/** Index pairs [have, want] of a longest common subsequence by key; both in increasing order. */
export function commonSubsequence(have: readonly SavedRule[], want: readonly DesiredRule[]): [number, number][] {
  // Same start and end are the usual case (one rule in or out): only the middle needs the table.
  let lo = 0;
  while (lo < have.length && lo < want.length && have[lo]!.kilo && have[lo]!.key === want[lo]!.key) lo++;
  let hiH = have.length;
  let hiW = want.length;
  while (hiH > lo && hiW > lo && have[hiH - 1]!.kilo && have[hiH - 1]!.key === want[hiW - 1]!.key) {
    hiH--;
    hiW--;
  }
  const pairs: [number, number][] = [];
  for (let i = 0; i < lo; i++) pairs.push([i, i]);
  let n = hiH - lo;
  let m = hiW - lo;
  // Thousands of jumps reshuffled at once: rebuilding the middle is cheaper than the table.
  if ((n + 1) * (m + 1) > maxTableCells) n = m = 0;
  const same = (i: number, j: number) => have[lo + i]!.kilo && have[lo + i]!.key === want[lo + j]!.key;
  // lengths[i][j] = LCS length of have[lo+i..] and want[lo+j..].
  const lengths = new Uint32Array((n + 1) * (m + 1));
  const at = (i: number, j: number) => i * (m + 1) + j;
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lengths[at(i, j)] = same(i, j)
        ? lengths[at(i + 1, j + 1)]! + 1
        : Math.max(lengths[at(i + 1, j)]!, lengths[at(i, j + 1)]!);
    }
  }
  for (let i = 0, j = 0; i < n && j < m;) {
    if (same(i, j)) {
      pairs.push([lo + i, lo + j]);
      i++;
      j++;
    } else if (lengths[at(i + 1, j)]! >= lengths[at(i, j + 1)]!) i++;
    else j++;
  }
  for (let k = 0; k < have.length - hiH; k++) pairs.push([hiH + k, hiW + k]);
  return pairs;
}

function deletesHitOnlyDoomed(have: readonly SavedRule[], doomed: readonly number[]): boolean {
  const left = have.map((r, i) => ({ key: r.key, i }));
  for (const d of doomed) {
    const first = left.findIndex((r) => r.key === have[d]!.key);
    if (left[first]!.i !== d) return false;
    left.splice(first, 1);
  }
  return true;
}
