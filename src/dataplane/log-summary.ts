import type { Ops, PeerChanges } from './types.js';

/** Log lines must not grow with the cluster: a few names, then counts. */
export const namesShown = 5;
export const detailLinesShown = 3;
const maxLineChars = 1000;

/**
 * Peer changes for a log line: each list cut to its first few keys. When a list is cut, `counts`
 * says how many there were (docs/performance.md#the-dataplane).
 */
export function summarizePeerChanges(c: PeerChanges): PeerChanges & { counts?: Record<keyof PeerChanges, number> } {
  const cut = c.added.length > namesShown || c.removed.length > namesShown || c.updated.length > namesShown;
  const out = {
    added: c.added.slice(0, namesShown),
    removed: c.removed.slice(0, namesShown),
    updated: c.updated.slice(0, namesShown),
  };
  return cut
    ? { ...out, counts: { added: c.added.length, removed: c.removed.length, updated: c.updated.length } }
    : out;
}

/**
 * One line per change is readable for a few changes; for thousands, the first few go to `info`
 * with a count of the rest, and every line (each cut to ~1 KB) goes to `debug`.
 */
export function logDetails(
  what: string,
  lines: readonly string[],
  info: (line: string) => void,
  debug: ((line: string) => void) | undefined,
): void {
  const cap = (l: string) => (l.length > maxLineChars ? `${l.slice(0, maxLineChars)}… (${l.length} chars)` : l);
  if (lines.length <= detailLinesShown + 1) {
    for (const l of lines) info(cap(l));
    return;
  }
  for (const l of lines.slice(0, detailLinesShown)) info(cap(l));
  info(`${what}: and ${lines.length - detailLinesShown} more changes (each one at debug level)`);
  if (debug) for (const l of lines.slice(detailLinesShown)) debug(cap(l));
}

/**
 * Ops of `writes` writes whose lines are made when first read: a first apply writes thousands (and
 * describing a new key derives its public half), while only logs and tests read them.
 */
export function opsDescribedOnRead(writes: number, describe: () => string[]): Ops {
  let details: string[] | undefined;
  return {
    writes,
    get details() {
      return (details ??= describe());
    },
  };
}
