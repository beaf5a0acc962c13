import { routeKey, ruleKey, sameRoute, type KernelRoute, type KernelRule } from './state.js';

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
  desired: { routes: readonly KernelRoute[]; rules: readonly KernelRule[] },
  actual: { routes: readonly KernelRoute[]; rules: readonly KernelRule[] },
  protectedKeys: ReadonlySet<string> = new Set(),
): RouteOp[] {
  const routes = diffRoutes(desired.routes, actual.routes, protectedKeys);
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

function diffRoutes(
  desired: readonly KernelRoute[],
  actual: readonly KernelRoute[],
  protectedKeys: ReadonlySet<string>,
) {
  const actualByKey = new Map<string, KernelRoute[]>();
  for (const r of actual) {
    const k = routeKey(r);
    const list = actualByKey.get(k);
    if (list) list.push(r);
    else actualByKey.set(k, [r]);
  }
  const deletes: RouteOp[] = [];
  const upserts: RouteOp[] = [];
  const wanted = new Set<string>();
  for (const want of desired) {
    const k = routeKey(want);
    wanted.add(k);
    const have = actualByKey.get(k);
    if (!have) upserts.push({ kind: 'route', action: 'add', route: want });
    else if (have.length === 1) {
      if (!sameRoute(have[0]!, want)) upserts.push({ kind: 'route', action: 'replace', route: want });
    } else {
      // Several of ours under one key (appended by an earlier run or by hand): which one `replace`
      // would hit is the kernel's choice, so remove them all and add the wanted one.
      for (const r of have) deletes.push({ kind: 'route', action: 'del', route: r });
      upserts.push({ kind: 'route', action: 'add', route: want });
    }
  }
  for (const [k, have] of actualByKey) {
    if (wanted.has(k) || protectedKeys.has(k)) continue;
    for (const r of have) deletes.push({ kind: 'route', action: 'del', route: r });
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
