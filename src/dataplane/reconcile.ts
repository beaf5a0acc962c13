import type { Plan } from '../mesh/types.js';
import type { DataplaneMemory } from './cache.js';
import { linkRemovesRoutes, type DesiredLink } from './links.js';
import type { ReadAhead } from './read-ahead.js';
import { PartialApplyError } from './routes/errors.js';
import type {
  DeviceNames,
  FirewallTables,
  Links,
  Ops,
  PeerChanges,
  ReconcileOptions,
  RoutingTables,
  WireGuardDevice,
} from './types.js';
import type { RoutingRead } from './routes/reconciler.js';

/** The node's dataplane: one implementation per concern, real or fake. */
export interface Dataplane {
  device: WireGuardDevice;
  links: Links;
  routes: RoutingTables;
  firewall: FirewallTables;
}

export interface ReconcileInput {
  plan: Plan;
  devices: DeviceNames;
  /** base64; read from the key file by the caller, never logged. */
  privateKey: string;
  /** null leaves the MTU alone. */
  mtu: number | null;
}

export interface ReconcileResult {
  wireGuard: PeerChanges;
  links: Ops;
  routes: Ops;
  firewall: Ops;
  /** Total write operations; zero when the machine already matched the plan. */
  writes: number;
  /** One entry per failed step, each naming what failed; the other steps were still applied. */
  errors: Error[];
}

/**
 * `memory`: what the last write left, diffed against instead of reading the machine (the agent's
 * passes between resyncs, see cache.ts); each step's outcome is kept in it, and a pass with an error
 * forgets it all. Without it every step reads.
 */
export interface ReconcileRun extends ReconcileOptions {
  memory?: DataplaneMemory;
  /** Reads (and the interface's creation) started before this reconcile, diffed against by its steps (read-ahead.ts). */
  ahead?: ReadAhead;
}

const noChanges = (): PeerChanges => ({ added: [], removed: [], updated: [] });
const noOps = (): Ops => ({ writes: 0, details: [] });

/**
 * Makes the machine equal to the plan, step by step. A step that fails does not stop the
 * others: a route the kernel rejects must not keep WireGuard peers or the firewall stale.
 * The firewall needs nothing else, the peers only the interface, the routes the interface's
 * address: each starts as soon as what it needs is there; errors are still reported in step order.
 */
export async function reconcile(
  dp: Dataplane,
  input: ReconcileInput,
  run: ReconcileRun = {},
): Promise<ReconcileResult> {
  const { plan } = input;
  const { memory, ahead, ...options } = run;
  const result: ReconcileResult = {
    wireGuard: noChanges(),
    links: noOps(),
    routes: noOps(),
    firewall: noOps(),
    writes: 0,
    errors: [],
  };
  // `partly`: what a step that failed for some objects did write still counts (the log must not say 0).
  const step = async <T>(
    name: string,
    f: () => Promise<T>,
    partly?: (e: PartialApplyError) => T,
  ): Promise<{ value: T | null; error?: Error }> => {
    try {
      return { value: await f() };
    } catch (e) {
      const err = e instanceof Error ? e : new Error(String(e));
      // A partial failure already names its area ("routes: 2 change(s) failed, …").
      const error = err.message.startsWith(`${name}:`) ? err : new Error(`${name}: ${err.message}`, { cause: err });
      const partial = partialOf(err);
      return { value: partial && partly ? partly(partial) : null, error };
    }
  };
  const report = <T>(r: { value: T | null; error?: Error }): T | null => {
    if (r.error) result.errors.push(r.error);
    return r.value;
  };
  const written = (e: PartialApplyError): Ops => ({ writes: e.ops.writes, details: [...e.ops.details] });

  const taken = ahead?.take();
  const given = async <S>(read: Promise<S | undefined> | undefined) => {
    const current = await read;
    return current === undefined ? {} : { current };
  };
  // The firewall needs no interface: it is on its way before anything else.
  const firewallDone = step('iptables', async () =>
    dp.firewall.reconcile(plan.firewall, memory?.forFirewall() ?? (await given(taken?.firewall))),
  );
  // An interface the last pass configured is taken to be there still (the routing monitor reports it
  // if it goes, wireguard-go's exit is seen anyway).
  const ensured = memory?.hasDevice === true;
  const created = ensured
    ? false
    : report(await step('WireGuard interface', () => taken?.ensured ?? dp.device.ensure()));
  const deviceReady = ensured || created !== null;
  // An interface this pass created holds nothing of a read taken before it: its configure reads.
  const remembered = memory?.forDevice();
  const deviceState =
    remembered && created === true ? (remembered.wrote ? { wrote: remembered.wrote } : {}) : remembered;
  // Both families' addresses on a dual-stack leader; one family's link is as before.
  const link: DesiredLink = {
    address: plan.wireGuardIP,
    ...(plan.wireGuardIPs ? { addresses: plan.wireGuardIPs } : {}),
    up: plan.interfaceUp,
    mtu: input.mtu,
  };
  const kilo = input.devices.kilo;
  const linkRead = taken?.link;
  const linksDone: Promise<{ value: Ops | null; error?: Error }> =
    !deviceReady || memory?.linkHolds(kilo, link)
      ? Promise.resolve({ value: noOps() })
      : step(`interface ${kilo}`, async () => dp.links.reconcile(kilo, link, await given(linkRead)), written).then(
          (r) => {
            memory?.linkWrote(kilo, r.error ? null : link, r.value?.details ?? []);
            return r;
          },
        );
  // A routes read taken ahead: one with none of Kilo's routes (a first apply) stays so whatever the
  // link step does, and its diff (CPU) runs while the interface is set up; another is stale once
  // that step may have removed routes (an address taken away, the link down; or not known).
  const routesRead = taken?.routes ?? Promise.resolve(undefined);
  const fromNothing = routesRead.then((r) => r?.empty === true);
  const routesAfterLinks = async (): Promise<RoutingRead | undefined> => {
    const [read, links, current] = await Promise.all([routesRead, linksDone, linkRead]);
    if (!read) return undefined;
    const wrote = deviceReady && !memory?.linkHolds(kilo, link);
    return !wrote || (!links.error && current !== undefined && !linkRemovesRoutes(current, link)) ? read : undefined;
  };
  // The routes need the interface's address. Unless from nothing, their diff (CPU) waits a turn, so
  // that the other steps' writes are out first.
  const routesDone = step(
    'routes',
    async () => {
      const remembered = memory?.forRoutes();
      const routing = { ...options, ...remembered, ...(plan.guard ? { guard: plan.guard } : {}) };
      if (await fromNothing)
        return dp.routes.reconcile(plan.routes, plan.rules, input.devices, {
          ...routing,
          read: (await routesRead)!,
          after: linksDone,
        });
      const read = await routesAfterLinks();
      // A link write may have removed routes, and the kernel tells no monitor of those (the last IPv4
      // address taken away, the link down): the last write is no longer what the machine holds.
      const links = await linksDone;
      if (remembered?.current && (links.error || (links.value?.writes ?? 0) > 0)) delete routing.current;
      await nextTurn();
      return dp.routes.reconcile(plan.routes, plan.rules, input.devices, { ...routing, ...(read ? { read } : {}) });
    },
    written,
  );
  // The peers need only the interface. A first apply's routes are the longest writes: they are sent
  // first, and the peers' diff a turn after.
  const wireGuardDone = deviceReady
    ? step(`WireGuard peers of ${input.devices.kilo}`, () =>
        fromNothing
          .then((ready) => (ready ? linksDone.then(nextTurn) : undefined))
          .then(async () =>
            dp.device.configure(
              {
                privateKey: input.privateKey,
                listenPort: plan.listenPort,
                fwmark: plan.fwmark ?? 0,
                peers: plan.peers,
              },
              { ...options, ...(deviceState ?? (await given(taken?.device))) },
            ),
          ),
      )
    : Promise.resolve({ value: null });
  result.links = report(await linksDone) ?? noOps();
  const [wireGuard, routes, firewall] = await Promise.all([wireGuardDone, routesDone, firewallDone]);
  result.wireGuard = report(wireGuard) ?? noChanges();
  result.routes = report(routes) ?? noOps();
  result.firewall = report(firewall) ?? noOps();
  const wg = result.wireGuard;
  result.writes =
    result.links.writes +
    result.routes.writes +
    result.firewall.writes +
    wg.added.length +
    wg.removed.length +
    wg.updated.length;
  // What a failed step left is not known: the next pass reads every part.
  if (result.errors.length > 0) memory?.forget();
  return result;
}

/** One turn of the event loop: what waits on I/O (commands under way, their answers) goes on meanwhile. */
export const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The PartialApplyError behind a step's error: the step applied all but the objects it names. */
export function partialOf(e: unknown): PartialApplyError | null {
  if (e instanceof PartialApplyError) return e;
  return e instanceof Error && e.cause instanceof PartialApplyError ? e.cause : null;
}

/** Removes everything Kilo added: firewall, routes and rules, and (optionally) the interface. */
export async function cleanUp(dp: Dataplane, opts: { interface: boolean }): Promise<Error[]> {
  const errors: Error[] = [];
  const attempt = async (name: string, f: () => Promise<unknown>) => {
    try {
      await f();
    } catch (e) {
      errors.push(new Error(`clean-up of ${name}: ${(e as Error).message}`, { cause: e }));
    }
  };
  await attempt('iptables', () => dp.firewall.cleanup());
  await attempt('routes', () => dp.routes.cleanup());
  if (opts.interface) await attempt('WireGuard interface', () => dp.device.destroy());
  return errors;
}
