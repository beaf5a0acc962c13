import type { Ops } from '../types.js';

/** One object (route, rule, address, …) that could not be made as the plan wants, and why. */
export interface ApplyFailure {
  /** The object as `ip` would show it, e.g. "route 10.42.3.0/24 via 192.168.1.3 dev eth0". */
  object: string;
  message: string;
}

/**
 * Thrown by a reconcile after it applied everything it could: `ops` are the writes that took
 * effect, `failures` the objects that did not. Throwing (instead of returning errors inside Ops)
 * keeps a partial failure from passing unnoticed; the caller logs it, counts `ops`, and the next
 * reconcile retries the failed objects because they still differ from the plan.
 */
export class PartialApplyError extends Error {
  constructor(
    /** What was reconciled: "routes", "links". */
    readonly area: string,
    readonly failures: readonly ApplyFailure[],
    readonly ops: Ops,
  ) {
    const shown = failures.slice(0, 5).map((f) => `${f.object}: ${f.message}`);
    if (failures.length > shown.length) shown.push(`and ${failures.length - shown.length} more`);
    super(`${area}: ${failures.length} change(s) failed, ${ops.writes} applied: ${shown.join('; ')}`);
    this.name = 'PartialApplyError';
  }
}
