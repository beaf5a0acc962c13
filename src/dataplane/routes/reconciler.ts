import type { PlanGuardRoute, PlanRoute, PlanRule } from '../../mesh/types.js';
import { AddressMemo } from '../../net/memo.js';
import { opsDescribedOnRead } from '../log-summary.js';
import { nextTurn } from '../reconcile.js';
import type { DeviceNames, DiffAgainst, Ops, ReconcileOptions, RoutingTables, RoutingWritten } from '../types.js';
import type { BatchResult } from './batch.js';
import { diffFromNothing, diffState, type RouteOp } from './diff.js';
import { PartialApplyError, type ApplyFailure } from './errors.js';
import { mainTableId } from './constants.js';
import { addGuard, guardAsKernel } from './guard.js';
import { patchedState } from './incremental.js';
import {
  defaultMetric,
  defaultOwnership,
  describeRoute,
  describeRule,
  desiredState,
  routeKey,
  type DesiredState,
  ruleKey,
  type KernelRoute,
  type KernelRule,
  type Ownership,
} from './state.js';

/** Kilo's routes and rules as they are on a machine. */
export interface KiloRouting {
  routes: KernelRoute[];
  /** In the kernel's order (it matters for which rule a delete removes). */
  rules: KernelRule[];
}

/** Kilo's routes and rules as a machine printed them, parsed when diffed against. */
export interface RoutingRead {
  /** Whether the read shows none of Kilo's routes and rules (a first apply). */
  readonly empty: boolean;
  /** `expected`: as for RouteKernel.read. */
  parse(expected?: ReadonlyMap<string, KernelRoute>): KiloRouting;
}

/**
 * Where routes live: the kernel through iproute2, or an in-memory model. Both read only what carries
 * the owner's marks and apply a list of changes, reporting each one that failed.
 */
export interface RouteKernel {
  /**
   * Reads the machine now. Parsed with `expected` (the routes about to be diffed, by routeKey), a
   * machine may return a route equal to one of them as that very object, instead of building its own.
   */
  read(owner: Ownership): Promise<RoutingRead>;
  /** Applies `ops` once `after` resolves (what can be done before, e.g. rendering them, is). */
  apply(ops: readonly RouteOp[], after?: Promise<unknown>): Promise<BatchResult>;
  /** Whether the machine holds something of Kilo's an apply removes even with no ops (unused next hops). */
  stale?(): boolean;
}

const noGuard: readonly PlanGuardRoute[] = [];

function sameRules(a: readonly KernelRule[], b: readonly KernelRule[]): boolean {
  const keys = (rules: readonly KernelRule[]) => rules.map(ruleKey).sort().join('\n');
  return a.length === b.length && keys(a) === keys(b);
}

export function describeOp(op: RouteOp): string {
  return `${op.action} ${op.kind === 'route' ? describeRoute(op.route) : describeRule(op.rule)}`;
}

function objectOf(op: RouteOp): string {
  const what = op.kind === 'route' ? describeRoute(op.route) : describeRule(op.rule);
  return op.action === 'del' ? `removing ${what}` : what;
}

/**
 * The plan's routes in kernel form as they would be if every text in the plan were canonical, without
 * parsing one (docs/performance.md#the-dataplane). Only a guess for comparing against a read: a route the
 * kernel prints exactly so proves its texts. null when some route could not be installed as planned
 * (a role without an interface, two routes at one key): then the whole desired state says why.
 */
function planAsKernel(
  routes: readonly PlanRoute[],
  guard: readonly PlanGuardRoute[],
  devices: DeviceNames,
  protocol: number,
): { byKey: Map<string, KernelRoute>; list: KernelRoute[] } | null {
  const byKey = new Map<string, KernelRoute>();
  const list: KernelRoute[] = [];
  for (const r of routes) {
    const dev = devices[r.dev];
    if (dev === null) return null;
    const family = r.dst.includes(':') ? 6 : 4;
    const table = r.table === 'main' ? mainTableId : r.table;
    const route: KernelRoute = {
      family,
      dst: r.dst,
      table,
      metric: defaultMetric(family),
      gw: r.gw,
      dev,
      src: r.src,
      onlink: r.onlink,
      type: 'unicast',
      protocol,
    };
    const key = routeKey(route);
    if (byKey.has(key)) return null;
    byKey.set(key, route);
    list.push(route);
  }
  // After the plan's routes: `list`'s first entries are the routes' (see `proven`).
  for (const route of guardAsKernel(guard, protocol)) {
    const key = routeKey(route);
    if (byKey.has(key)) return null;
    byKey.set(key, route);
    list.push(route);
  }
  return { byKey, list };
}

/** Whether `routes` are exactly the routes of `byKey`, each once (as objects: see RouteKernel.read). */
function sameRoutes(routes: readonly KernelRoute[], byKey: ReadonlyMap<string, KernelRoute>): boolean {
  if (routes.length !== byKey.size) return false;
  // By identity: no key is made again for ten thousand routes.
  const left = new Set(byKey.values());
  return routes.every((r) => left.delete(r));
}

/**
 * RoutingTables over any RouteKernel: read Kilo's state, diff it against the plan, apply the
 * difference in one go. A partial failure still applies everything else and then throws
 * PartialApplyError (which carries the Ops that took effect).
 */
export class KiloRoutingTables implements RoutingTables {
  /**
   * The last desired state and what it was built from: a resync whose plan was reused (only
   * heartbeats since) hands over the same arrays: no routes built again (docs/performance.md#heartbeats-and-passes).
   */
  private desired: {
    routes: readonly PlanRoute[];
    rules: readonly PlanRule[];
    guard: readonly PlanGuardRoute[];
    devices: string;
    state: DesiredState;
  } | null = null;
  /**
   * The last diff that found nothing to do, and its inputs: a read that is the very same object
   * (the machine's reader returns it again for the same texts) against the same desired state has
   * nothing to do again.
   */
  private clean: { desired: DesiredState; actual: KiloRouting } | null = null;
  /**
   * @param addresses the plan's prefixes and addresses parsed, across reconciles (shared with the
   * machine's reader, which sees the same texts).
   */
  constructor(
    private readonly kernel: RouteKernel,
    readonly owner: Ownership = defaultOwnership,
    private readonly addresses: AddressMemo = new AddressMemo(),
  ) {}

  /** Kilo's routes and rules on the machine now. */
  async read(expected?: ReadonlyMap<string, KernelRoute>): Promise<KiloRouting> {
    return (await this.kernel.read(this.owner)).parse(expected);
  }

  readUnparsed(): Promise<RoutingRead> {
    return this.kernel.read(this.owner);
  }

  async reconcile(
    routes: readonly PlanRoute[],
    rules: readonly PlanRule[],
    devices: DeviceNames,
    options: ReconcileOptions &
      DiffAgainst<RoutingWritten> & {
        read?: RoutingRead;
        after?: Promise<unknown>;
        guard?: readonly PlanGuardRoute[];
      } = {},
  ): Promise<Ops> {
    const guard = options.guard ?? noGuard;
    const remembered = options.current ?? null;
    const given = options.read;
    const read = async (expected: ReadonlyMap<string, KernelRoute>) =>
      given ? given.parse(expected) : this.read(expected);
    const clean = this.clean;
    this.clean = null;
    // Before the interface is set up (`after`): a turn for what waits meanwhile before each stretch of CPU.
    const turn = () => (options.after ? nextTurn() : undefined);
    let actual: KiloRouting | undefined;
    let proven: (KernelRoute | undefined)[] | undefined;
    // Nothing on the machine (a first apply), or the desired state built already: the guess would only cost its time.
    if (options.once && !remembered && !given?.empty && !this.builtFor(routes, rules, guard, devices)) {
      const guess = planAsKernel(routes, guard, devices, this.owner.protocol);
      if (guess) {
        actual = await read(guess.byKey);
        const rulesWanted = desiredState([], rules, devices, this.owner, this.addresses);
        // Every route on the machine is one of the plan's, printed exactly as the plan writes it, and
        // none is missing: the kernel's text is canonical, so the plan's is too, and nothing changes;
        // unless a crash left next hops of Kilo's no route uses, which an apply removes (below).
        if (
          rulesWanted.problems.length === 0 &&
          sameRoutes(actual.routes, guess.byKey) &&
          diffState({ routes: [], rules: rulesWanted.rules }, { routes: [], rules: actual.rules }).length === 0 &&
          !this.kernel.stale?.()
        )
          return { writes: 0, details: [] };
        // Something changes: the routes the kernel printed as guessed need no parsing for the diff.
        const printed = new Set(actual.routes);
        proven = guess.list.map((r) => (printed.has(r) ? r : undefined));
      }
    }
    await turn();
    // The last write is the last desired state: only what the plans do not share is built and diffed.
    const patched = remembered && !given ? this.patched(remembered, routes, rules, guard, devices) : null;
    const desired = patched?.state ?? this.desiredState(routes, rules, guard, devices, proven);
    await turn();
    // A remembered state serves routes only: which rule a delete hits depends on the kernel's order of
    // rules, so a change of rules is always diffed against a read.
    actual ??= remembered && sameRules(remembered.rules, desired.rules) ? remembered : await read(desired.byKey);
    const ops = patched
      ? patched.ops
      : clean?.desired === desired && clean.actual === actual
        ? []
        : given?.empty
          ? diffFromNothing(desired)
          : diffState(desired, actual, desired.protectedKeys);
    await turn();
    const done = await this.apply(ops, [...desired.problems], options.after);
    if (ops.length === 0 && desired.problems.length === 0) this.clean = { desired, actual };
    // Reached only when every change took effect; with problems, routes under protected keys are
    // whatever the kernel had, so only a read knows them.
    if (desired.problems.length === 0)
      options.wrote?.({ routes: desired.routes, rules: desired.rules, byKey: desired.byKey });
    return done;
  }

  /**
   * The desired state patched from the last one and its diff against `remembered`, when that is the
   * last desired state as written, with the same rules and devices; null: build and diff it whole.
   */
  private patched(
    remembered: RoutingWritten,
    routes: readonly PlanRoute[],
    rules: readonly PlanRule[],
    guard: readonly PlanGuardRoute[],
    devices: DeviceNames,
  ): { state: DesiredState; ops: RouteOp[] } | null {
    const last = this.desired;
    const names = `${devices.kilo} ${devices.private} ${devices.tunnel}`;
    if (!last || last.devices !== names || remembered.byKey !== last.state.byKey) return null;
    if (remembered.routes !== last.state.routes || this.builtFor(routes, rules, guard, devices)) return null;
    const wanted = desiredState([], rules, devices, this.owner, this.addresses);
    if (wanted.problems.length > 0 || !sameRules(wanted.rules, remembered.rules)) return null;
    const patched = patchedState(last, routes, guard, wanted.rules, devices, this.owner.protocol, this.addresses);
    if (patched) this.desired = { routes, rules, guard, devices: names, state: patched.state };
    return patched;
  }

  /** Whether the desired state of these inputs is built already. */
  private builtFor(
    routes: readonly PlanRoute[],
    rules: readonly PlanRule[],
    guard: readonly PlanGuardRoute[],
    devices: DeviceNames,
  ): boolean {
    const last = this.desired;
    return (
      last !== null &&
      last.routes === routes &&
      last.rules === rules &&
      last.guard === guard &&
      last.devices === `${devices.kilo} ${devices.private} ${devices.tunnel}`
    );
  }

  private desiredState(
    routes: readonly PlanRoute[],
    rules: readonly PlanRule[],
    guard: readonly PlanGuardRoute[],
    devices: DeviceNames,
    proven?: readonly (KernelRoute | undefined)[],
  ): DesiredState {
    const names = `${devices.kilo} ${devices.private} ${devices.tunnel}`;
    const last = this.desired;
    if (last && this.builtFor(routes, rules, guard, devices)) return last.state;
    // The memo's pass is a build, with the machine's reads until the next one (they share the memo).
    this.addresses.nextPass();
    const state = desiredState(routes, rules, devices, this.owner, this.addresses, proven);
    // The guard needs no interface: it is installed even when the plan's routes through kilo cannot be.
    addGuard(state, guard, this.owner.protocol, this.addresses);
    this.desired = { routes, rules, guard, devices: names, state };
    return state;
  }

  async cleanup(): Promise<Ops> {
    const actual = await this.read();
    return this.apply(diffState({ routes: [], rules: [] }, actual), []);
  }

  private async apply(ops: readonly RouteOp[], failures: ApplyFailure[], after?: Promise<unknown>): Promise<Ops> {
    const result = ops.length === 0 && !this.kernel.stale?.() ? { failures: [] } : await this.kernel.apply(ops, after);
    const failed = new Map(result.failures.map((f) => [f.index, f.message]));
    const applied = failed.size === 0 ? ops : ops.filter((_, i) => !failed.has(i));
    for (const [i, message] of [...failed].sort((a, b) => a[0] - b[0]))
      failures.push({ object: objectOf(ops[i]!), message });
    // Described when read, not while the process waits to exit.
    const done = opsDescribedOnRead(applied.length, () => applied.map(describeOp));
    if (failures.length > 0) throw new PartialApplyError('routes', failures, done);
    return done;
  }
}
