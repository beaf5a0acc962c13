import { routeKey, ruleKey, sameRouteAtKey, type KernelRoute, type KernelRule } from './state.js';

/** One change to the machine; the Linux implementation renders it as an `ip -batch` line. */
export type RouteOp =
  | { kind: 'route'; action: 'add' | 'replace' | 'del'; route: KernelRoute }
  | { kind: 'rule'; action: 'add' | 'del'; rule: KernelRule };

/**
 * The changes that turn Kilo's `actual` routes and rules into `desired`, in apply order: stale rules,
 * stale routes, then new and changed routes, then new rules. Routes under `protectedKeys` (plan
 * entries that could not be expressed) are left as they are.
 */
export function diffState(
  desired: { routes: readonly KernelRoute[]; rules: readonly KernelRule[]; byKey?: ReadonlyMap<string, KernelRoute> },
  actual: { routes: readonly KernelRoute[]; rules: readonly KernelRule[]; byKey?: ReadonlyMap<string, KernelRoute> },
  protectedKeys: ReadonlySet<string> = new Set(),
): RouteOp[] {
  const routes = diffRoutes(
    desired.byKey ?? routesByKey(desired.routes),
    actual.byKey ?? routesByKey(actual.routes),
    protectedKeys,
  );
  const rules4 = diffRules(
    desired.rules.filter((r) => r.family === 4),
    actual.rules.filter((r) => r.family === 4),
  );
  const rules6 = diffRules(
    desired.rules.filter((r) => r.family === 6),
    actual.rules.filter((r) => r.family === 6),
  );
  return [...rules4.deletes, ...rules6.deletes, ...routes.deletes, ...routes.upserts, ...rules4.adds, ...rules6.adds];
}

/**
 * diffState against a machine with none of Kilo's routes and rules (a first apply): every route
 * added, in the desired order, then the rules; ten thousand routes need no lookups for that.
 */
export function diffFromNothing(desired: { routes: readonly KernelRoute[]; rules: readonly KernelRule[] }): RouteOp[] {
  const ops: RouteOp[] = desired.routes.map((route) => ({ kind: 'route', action: 'add', route }));
  for (const op of diffState({ routes: [], rules: desired.rules }, { routes: [], rules: [] })) ops.push(op);
  return ops;
}

/**
 * Routes by key; several under one key (appended by an earlier run or by hand) are kept as a list.
 * A reconcile that trusts its last write passes the maps it already has and builds none.
 */
export function routesByKey(routes: readonly KernelRoute[]): Map<string, KernelRoute | KernelRoute[]> {
  const out = new Map<string, KernelRoute | KernelRoute[]>();
  for (const r of routes) {
    const k = routeKey(r);
    const had = out.get(k);
    if (had === undefined) out.set(k, r);
    else if (Array.isArray(had)) had.push(r);
    else out.set(k, [had, r]);
  }
  return out;
}

function diffRoutes(
  desired: ReadonlyMap<string, KernelRoute | KernelRoute[]>,
  actual: ReadonlyMap<string, KernelRoute | KernelRoute[]>,
  protectedKeys: ReadonlySet<string>,
) {
  const deletes: RouteOp[] = [];
  const upserts: RouteOp[] = [];
  for (const [k, wanted] of desired) {
    // The desired state has one route per key (desiredState drops the rest as conflicts).
    const want = Array.isArray(wanted) ? wanted[0]! : wanted;
    const have = actual.get(k);
    if (have === undefined) upserts.push({ kind: 'route', action: 'add', route: want });
    else if (!Array.isArray(have)) {
      if (!sameRouteAtKey(have, want)) upserts.push({ kind: 'route', action: 'replace', route: want });
    } else {
      // Several of ours under one key: which one `replace` would hit is the kernel's choice, so
      // remove them all and add the wanted one.
      for (const r of have) deletes.push({ kind: 'route', action: 'del', route: r });
      upserts.push({ kind: 'route', action: 'add', route: want });
    }
  }
  for (const [k, have] of actual) {
    if (desired.has(k) || protectedKeys.has(k)) continue;
    for (const r of Array.isArray(have) ? have : [have]) deletes.push({ kind: 'route', action: 'del', route: r });
  }
  return { deletes, upserts };
}

/**
 * Whether `ip rule del` with `spec`'s selectors removes `rule`: the kernel compares only the
 * selectors a delete names, and removes the first rule in list order that matches. `not` is not
 * compared (a delete of `fwmark X` also removes `not fwmark X`).
 */
export function ruleDeleteMatches(spec: KernelRule, rule: KernelRule): boolean {
  return (
    spec.family === rule.family &&
    spec.priority === rule.priority &&
    spec.table === rule.table &&
    (spec.src === null || spec.src === rule.src) &&
    (spec.dst === null || spec.dst === rule.dst) &&
    (spec.iif === null || spec.iif === rule.iif) &&
    (spec.fwmark === null || spec.fwmark === rule.fwmark)
  );
}

/**
 * Whether adding `add` fails with "File exists" because of `existing`: the kernel compares the
 * interface and the firewall mark always, the address selectors only when the new rule names them
 * (so `to X` clashes with an existing `from A to X` at the same priority), and `not` never.
 */
export function ruleAddConflicts(add: KernelRule, existing: KernelRule): boolean {
  return (
    add.family === existing.family &&
    add.priority === existing.priority &&
    add.table === existing.table &&
    add.iif === existing.iif &&
    add.fwmark === existing.fwmark &&
    (add.src === null || add.src === existing.src) &&
    (add.dst === null || add.dst === existing.dst)
  );
}

function specificity(r: KernelRule): number {
  return (r.src ? 1 : 0) + (r.dst ? 1 : 0);
}

/** Adding the less specific rules first never clashes (see ruleAddConflicts). */
function addOrder(rules: readonly KernelRule[]): KernelRule[] {
  return [...rules].sort((a, b) => specificity(a) - specificity(b));
}

/**
 * Rules of one family. The precise difference is used when the kernel's loose matching lets every
 * delete hit exactly the stale rule and every add go in; otherwise all of Kilo's rules of the family
 * are removed front to back (the first match is then always the intended rule) and re-added.
 */
function diffRules(
  desired: readonly KernelRule[],
  actual: readonly KernelRule[],
): { deletes: RouteOp[]; adds: RouteOp[] } {
  const wanted = new Map<string, KernelRule>();
  for (const r of desired) wanted.set(ruleKey(r), r);
  const kept = new Set<string>();
  const stale: KernelRule[] = [];
  for (const r of actual) {
    const k = ruleKey(r);
    if (wanted.has(k) && !kept.has(k)) kept.add(k);
    else stale.push(r);
  }
  const missing = addOrder([...wanted.values()].filter((r) => !kept.has(ruleKey(r))));
  if (preciseDiffWorks(actual, stale, missing)) {
    return {
      deletes: stale.map((rule) => ({ kind: 'rule', action: 'del', rule })),
      adds: missing.map((rule) => ({ kind: 'rule', action: 'add', rule })),
    };
  }
  return {
    deletes: actual.map((rule) => ({ kind: 'rule', action: 'del', rule })),
    adds: addOrder([...wanted.values()]).map((rule) => ({ kind: 'rule', action: 'add', rule })),
  };
}

function preciseDiffWorks(
  actual: readonly KernelRule[],
  stale: readonly KernelRule[],
  missing: readonly KernelRule[],
): boolean {
  const list = [...actual];
  for (const s of stale) {
    const i = list.findIndex((r) => ruleDeleteMatches(s, r));
    if (list[i] !== s) return false;
    list.splice(i, 1);
  }
  for (const a of missing) {
    if (list.some((r) => ruleAddConflicts(a, r))) return false;
    list.push(a);
  }
  return true;
}
