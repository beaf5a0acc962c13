import type { RouteOp } from './diff.js';
import { routeKey } from './state.js';

/** One `ip -batch`: the indices (into the ops) of its lines, in order; `-6` for IPv6 rules. */
export interface Batch {
  indices: number[];
  options: string[];
}

/**
 * Where a batch is split in two, in lines that can go either way: two processes on two cores halve
 * a big batch's time, a small one would only pay for the second (docs/performance.md#the-dataplane).
 */
export const defaultSplitAt = 1000;

/**
 * The `ip -batch` runs that apply `ops` (in diffState's order), as phases: each phase's batches
 * run at the same time, each phase after the one before. Every op is in exactly one batch.
 *
 * Usually one phase: every op but IPv6 rules in one batch (iproute2 takes no per-line `-6`, and
 * infers no rule's family), then the IPv6 rules in an `ip -6 -batch`.
 *
 * With at least `splitAt` free routes the first batch is split in two that run together. A free
 * route is an add or replace whose outcome depends on no other op: the kernel checks its device
 * and its source address, both written before any route, and its gateway only when it is not
 * onlink (then it looks the gateway up in the routes, which other lines of the batch may add or
 * remove), and no delete in the batch is at its key. So the split is made only when no route has a
 * gateway that is not onlink (Kilo's never have: every gateway route it plans is onlink). Then
 * each free route succeeds or fails exactly as in one batch, whatever the interleaving; the deletes
 * and the routes at their keys keep their order in the first half, and new IPv4 rules are added
 * once every route is in (traffic is steered to a table only after its routes are there).
 */
export function batchesOf(ops: readonly RouteOp[], splitAt = defaultSplitAt): Batch[][] {
  const v6rule = (op: RouteOp) => op.kind === 'rule' && op.rule.family === 6;
  const v6: number[] = [];
  const rest: number[] = [];
  ops.forEach((op, i) => (v6rule(op) ? v6 : rest).push(i));
  const last: Batch[][] = v6.length > 0 ? [[{ indices: v6, options: ['-6'] }]] : [];
  const whole: Batch[][] = [[{ indices: rest, options: [] }], ...last];
  if (rest.length < splitAt) return whole;

  const deleted = new Set<string>();
  for (const op of ops) {
    if (op.kind !== 'route') continue;
    if (op.action === 'del') deleted.add(routeKey(op.route));
    else if (op.route.gw !== null && !op.route.onlink) return whole;
  }
  // A first apply deletes nothing: no route's key is needed (docs/performance.md#the-dataplane).
  const free = (op: RouteOp) =>
    op.kind === 'route' && op.action !== 'del' && (deleted.size === 0 || !deleted.has(routeKey(op.route)));
  const isFree = rest.map((i) => free(ops[i]!));
  const count = isFree.reduce((n, f) => n + (f ? 1 : 0), 0);
  if (count < splitAt) return whole;

  const first: number[] = [];
  const second: number[] = [];
  const ruleAdds: number[] = [];
  let seen = 0;
  rest.forEach((i, n) => {
    const op = ops[i]!;
    if (op.kind === 'rule' && op.action === 'add') ruleAdds.push(i);
    else if (isFree[n] && seen++ >= count / 2) second.push(i);
    else first.push(i);
  });
  const phases: Batch[][] = [
    [
      { indices: first, options: [] },
      { indices: second, options: [] },
    ],
  ];
  if (ruleAdds.length > 0) phases.push([{ indices: ruleAdds, options: [] }]);
  return [...phases, ...last];
}
