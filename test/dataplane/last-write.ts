import type { DiffAgainst } from '../../src/dataplane/types.js';

/**
 * A test's memory of what a seam's last write left, as DataplaneMemory keeps it: keep() records the
 * next write; trust() diffs against the last one (and records the next).
 */
export function lastWrite<S>() {
  let after: S | undefined;
  const wrote = (a: S) => {
    after = a;
  };
  return {
    keep: (): DiffAgainst<S> => ({ wrote }),
    trust: (): DiffAgainst<S> => {
      const current = after;
      after = undefined;
      return current === undefined ? { wrote } : { current, wrote };
    },
  };
}
