import type { PlanGuardRoute, PlanRoute } from '../../mesh/types.js';
import type { AddressMemo } from '../../net/memo.js';
import { align } from '../align.js';
import type { DeviceNames } from '../types.js';
import type { RouteOp } from './diff.js';
import { addGuard } from './guard.js';
import {
  desiredState,
  routeKey,
  sameRouteAtKey,
  type DesiredState,
  type KernelRoute,
  type KernelRule,
} from './state.js';

/** A desired state and the plan's routes and guard it was built from (rules are the caller's). */
export interface BuiltFrom {
  routes: readonly PlanRoute[];
  guard: readonly PlanGuardRoute[];
  state: DesiredState;
}

/** More changes than this share of the routes and a whole build is as cheap; it is made instead. */
const mostChanged = 1 / 8;

const samePlanRoute = (a: PlanRoute, b: PlanRoute) =>
  a.dst === b.dst &&
  a.table === b.table &&
  a.gw === b.gw &&
  a.dev === b.dev &&
  a.src === b.src &&
  a.onlink === b.onlink;

const sameGuard = (a: PlanGuardRoute, b: PlanGuardRoute) => a.dst === b.dst && a.table === b.table;

/**
 * The desired state of `routes`, `guard` and `rules` (built already: they are few), patched from
 * `last` (built from the plan before, with the same devices, owner and rules), and the changes that turn `last.state` into it: what diffState of
 * the two would give, found by looking only at what the plans do not share (docs/performance.md,
 * "A join at 20,000"). Only the routes and guard that differ are built; a kept route is the very
 * object of the last state. null where the whole build must decide: the last state had problems or
 * dropped a duplicate, a new entry is a problem or shares a key with another, or much changed.
 *
 * `last.state` is used up when a patch is returned: its map of routes by key is the new state's.
 * Its caller diffs against it no more (the memory hands the last write over once, cache.ts).
 */
export function patchedState(
  last: BuiltFrom,
  routes: readonly PlanRoute[],
  guard: readonly PlanGuardRoute[],
  rules: KernelRule[],
  devices: DeviceNames,
  protocol: number,
  memo: AddressMemo,
): { state: DesiredState; ops: RouteOp[] } | null {
  const before = last.state;
  const planned = last.routes.length;
  // One kernel route per entry, in order: the plan's routes, then the guard's.
  if (before.problems.length > 0 || before.protectedKeys.size > 0) return null;
  if (before.routes.length !== planned + last.guard.length) return null;
  const limit = Math.max(16, Math.floor((routes.length + guard.length) * mostChanged));
  const goneRoutes: number[] = [];
  const goneGuard: number[] = [];
  const routesTaken = align(last.routes, routes, samePlanRoute, goneRoutes, limit);
  const guardTaken = routesTaken && align(last.guard, guard, sameGuard, goneGuard, limit);
  if (!routesTaken || !guardTaken) return null;

  // The new entries alone, built as a whole build would build them.
  const added: PlanRoute[] = [];
  for (let i = 0; i < routes.length; i++) if (routesTaken[i] === -1) added.push(routes[i]!);
  const addedGuard: PlanGuardRoute[] = [];
  for (let i = 0; i < guard.length; i++) if (guardTaken[i] === -1) addedGuard.push(guard[i]!);
  const fresh = desiredState(added, [], devices, { protocol, priority: 0 }, memo);
  addGuard(fresh, addedGuard, protocol, memo);
  if (fresh.problems.length > 0 || fresh.routes.length !== added.length + addedGuard.length) return null;

  const goneRoutesOf = (gone: number[], offset: number) => gone.map((j) => before.routes[offset + j]!);
  const removed = [...goneRoutesOf(goneRoutes, 0), ...goneRoutesOf(goneGuard, planned)];
  const removedKeys = new Set(removed.map(routeKey));
  const freshKeys = new Set<string>();
  // A new route at a key a kept one holds is a conflict (or a duplicate) the whole build names.
  for (const r of fresh.routes) {
    const key = routeKey(r);
    if ((before.byKey.has(key) && !removedKeys.has(key)) || freshKeys.has(key)) return null;
    freshKeys.add(key);
  }

  const out: KernelRoute[] = new Array<KernelRoute>(routes.length + guard.length);
  let n = 0;
  for (let i = 0; i < routes.length; i++)
    out[i] = routesTaken[i] === -1 ? fresh.routes[n++]! : before.routes[routesTaken[i]!]!;
  for (let i = 0; i < guard.length; i++)
    out[routes.length + i] = guardTaken[i] === -1 ? fresh.routes[n++]! : before.routes[planned + guardTaken[i]!]!;

  // diffState(new, last) in its order: the deletes (keys no longer wanted), then adds and replaces.
  const ops: RouteOp[] = [];
  for (const r of removed) if (!freshKeys.has(routeKey(r))) ops.push({ kind: 'route', action: 'del', route: r });
  for (const r of fresh.routes) {
    const had = before.byKey.get(routeKey(r));
    if (had === undefined) ops.push({ kind: 'route', action: 'add', route: r });
    else if (!sameRouteAtKey(had, r)) ops.push({ kind: 'route', action: 'replace', route: r });
  }
  // The last state's map becomes the new one's: a copy of tens of thousands of entries was half of
  // a patch's time, and the last state is not diffed against again (the caller's contract).
  const byKey = before.byKey;
  for (const key of removedKeys) byKey.delete(key);
  for (const r of fresh.routes) byKey.set(routeKey(r), r);
  const state: DesiredState = { routes: out, rules, problems: [], protectedKeys: new Set(), byKey };
  return { state, ops };
}
