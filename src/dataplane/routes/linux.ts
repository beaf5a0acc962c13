import { ExecError, type Exec } from '../exec.js';
import type { Family } from '../../net/cidr.js';
import { AddressMemo } from '../../net/memo.js';
import { runBatch, type BatchResult } from './batch.js';
import type { RouteOp } from './diff.js';
import { Nexthops } from './nexthops.js';
import { batchesOf, defaultSplitAt } from './schedule.js';
import { parseRoutes, parseRules, renderOps } from './iproute.js';
import { PrintedRoutes, textDigest } from './printed.js';
import { KiloRoutingTables, type KiloRouting, type RouteKernel, type RoutingRead } from './reconciler.js';
import { defaultOwnership, type KernelRoute, type Ownership } from './state.js';

/**
 * The kernel's routing tables through iproute2: reads with `ip -N -j`, filtered by Kilo's protocol
 * (so a node with a full BGP table is not read whole), writes with one `ip -batch`.
 */
export class IprouteRoutes implements RouteKernel {
  /** The kernel's prefixes and addresses parsed, across reads. */
  private readonly addresses: AddressMemo;
  /** Whether this reader's reads are the memo's passes (a shared memo's are its owner's). */
  private readonly ownsMemo: boolean;
  /**
   * The last read and the texts iproute2 printed for it: the same texts are the same read, the very
   * object, which the reconciler knows it has diffed (docs/performance.md#the-dataplane).
   */
  private last: {
    owner: Ownership;
    expected: ReadonlyMap<string, KernelRoute> | undefined;
    /** The texts' digests (printed.ts): routes and rules of each family; null for the first read. */
    digests: string[] | null;
    routing: KiloRouting;
  } | null = null;

  /**
   * @param addresses best the routes reconciler's own, as linuxRoutingTables does: the kernel's
   * texts are the plan's. Its passes are then the reconciler's: a read that began one too would
   * size it by the read alone, which asks for few texts (routes equal to the plan's are taken
   * whole), and the next plan would find it emptied and parse every route again.
   */
  /**
   * Kilo's next-hop objects (nexthops.ts); null where the kernel or iproute2 has none (found on the
   * first read, once): then gateway routes are written plain, as `via`.
   */
  private nexthops: Nexthops | null;
  /** The owner's protocol, for the next hops Kilo writes: the last read's. */
  private protocol: number = defaultOwnership.protocol;
  /** Applies begun and ended: a read that saw one of them does not replace what the apply followed. */
  private writes = 0;

  constructor(
    private readonly exec: Exec,
    addresses?: AddressMemo,
    /** Free routes from which a batch is split in two (see batchesOf). */
    private readonly splitAt = defaultSplitAt,
    /** false: gateway routes plain (`via`), as on a kernel without next-hop objects. */
    nexthops = true,
  ) {
    this.addresses = addresses ?? new AddressMemo();
    this.ownsMemo = addresses === undefined;
    this.nexthops = nexthops ? new Nexthops(() => this.protocol) : null;
  }

  /** The reads behind `read`: routes by Kilo's protocol and all rules (filtered here by priority), per family. */
  private reads(owner: Ownership) {
    const argv = (family: Family, args: string[]) => ['ip', '-N', '-j', `-${family}`, ...args];
    return ([4, 6] as const).map((family) => ({
      family,
      routes: argv(family, ['route', 'show', 'table', 'all', 'proto', String(owner.protocol)]),
      rules: argv(family, ['rule', 'show']),
    }));
  }

  async read(owner: Ownership): Promise<RoutingRead> {
    const reads = this.reads(owner);
    const writes = this.writes;
    this.protocol = owner.protocol;
    const [shown, nexthops] = await Promise.all([
      Promise.all(reads.map((r) => Promise.all([this.show(r.family, r.routes), this.show(r.family, r.rules)]))),
      this.showNexthops(),
    ]);
    const texts = shown.map(([routes, rules], i): [PrintedRoutes, string] => [
      new PrintedRoutes(reads[i]!.family, routes),
      rules,
    ]);
    // A read taken while this reader wrote may miss routes the write has followed since.
    if (this.nexthops && nexthops !== null && writes === this.writes && writes % 2 === 0)
      this.nexthops.read(
        nexthops,
        texts.map(([routes]) => routes),
      );
    // Listed by Kilo's protocol: any route is one of Kilo's (and a megabyte is not parsed to say so).
    const empty = texts.every(
      ([routes, rules], i) =>
        /^\s*(\[\s*\])?\s*$/.test(routes.json) && parseRules(rules, reads[i]!.family, owner.priority).length === 0,
    );
    return { empty, parse: (expected) => this.parse(owner, texts, expected) };
  }

  private parse(
    owner: Ownership,
    texts: [PrintedRoutes, string][],
    expected?: ReadonlyMap<string, KernelRoute>,
  ): KiloRouting {
    if (this.ownsMemo) this.addresses.nextPass();
    const reads = this.reads(owner);
    const last = this.last;
    // The first read is not digested (printed.ts): nothing came before it, and kg apply reads once.
    const digests = last === null ? null : texts.flatMap(([routes, rules]) => [routes.digest, textDigest(rules)]);
    if (
      digests !== null &&
      last?.digests &&
      last.owner === owner &&
      last.expected === expected &&
      last.digests.every((d, i) => d === digests[i])
    )
      return last.routing;
    const families = reads.map((r, i) => {
      const printed = texts[i]![0];
      // The next hops' routes come from this parse (nexthops.ts), unless they parsed the text already.
      const nhids = printed.nhids === null ? new Map<string, number>() : undefined;
      const routes = parseRoutes(
        printed.json,
        r.family,
        owner.protocol,
        this.addresses,
        expected,
        (id) => this.nexthops?.hops.get(id),
        nhids,
      );
      if (nhids) printed.nhids = nhids;
      return { routes, rules: parseRules(texts[i]![1], r.family, owner.priority, this.addresses) };
    });
    const routing = { routes: families.flatMap((f) => f.routes), rules: families.flatMap((f) => f.rules) };
    this.last = { owner, expected, digests, routing };
    return routing;
  }

  /** `ip -N -j nexthop show`: every next hop, for the ids Kilo's take and the ones that are Kilo's. */
  private async showNexthops(): Promise<string | null> {
    if (!this.nexthops) return null;
    try {
      return (await this.exec.run(['ip', '-N', '-j', 'nexthop', 'show'])).stdout;
    } catch (e) {
      if (!(e instanceof ExecError)) throw e;
      // A kernel before 5.3 or an iproute2 without `ip nexthop`: plain routes from now on.
      this.nexthops = null;
      return null;
    }
  }

  /**
   * Whether Kilo's next hops include some no route uses (a crash's, a clean-up's): an apply with no
   * route to write still removes them.
   */
  stale(): boolean {
    return (this.nexthops?.unused().length ?? 0) > 0;
  }

  /** `ip -N -j -F …`; a kernel booted with IPv6 disabled has no IPv6 state rather than an error. */
  private async show(family: Family, argv: string[]): Promise<string> {
    try {
      return (await this.exec.run(argv)).stdout;
    } catch (e) {
      if (family === 6 && e instanceof ExecError && /Address family not supported/i.test(e.stderr)) return '[]';
      throw e;
    }
  }

  /**
   * Applies `ops` in the `ip -batch` runs batchesOf makes (one, or a large one split in two run
   * together), once `after` resolves (their lines are made before).
   */
  async apply(ops: readonly RouteOp[], after?: Promise<unknown>): Promise<BatchResult> {
    const nexthops = this.nexthops;
    const hops = nexthops?.plan(ops);
    let lines = renderOps(ops, hops?.idOf);
    await after;
    this.writes++;
    try {
      if (nexthops && hops && hops.adds.length > 0) {
        // Before the routes that use them; a route whose next hop the kernel refused is written plain.
        const refused = new Set((await runBatch(this.exec, hops.adds)).failures.map((f) => f.index));
        nexthops.added(hops, refused);
        if (refused.size > 0) lines = renderOps(ops, hops.idOf);
      }
      const out = await this.applyLines(ops, lines);
      if (nexthops && hops)
        await this.tidy(
          nexthops,
          ops,
          ops.map((op) => hops.idOf(op)),
          out,
        );
      return out;
    } finally {
      this.writes++;
    }
  }

  /**
   * Follows the routes that took effect and, when every line did (a line iproute2 did not confirm
   * may have moved a route to a new next hop), deletes Kilo's next hops no route uses any more:
   * the kernel would delete a route with its next hop.
   */
  private async tidy(
    nexthops: Nexthops,
    ops: readonly RouteOp[],
    ids: readonly (number | undefined)[],
    out: BatchResult,
  ): Promise<void> {
    const failed = new Set(out.failures.map((f) => f.index));
    const done = failed.size === 0 ? ops : ops.filter((_, i) => !failed.has(i));
    nexthops.wrote(done, failed.size === 0 ? ids : ids.filter((_, i) => !failed.has(i)));
    if (failed.size > 0) return;
    const unused = nexthops.unused();
    if (unused.length === 0) return;
    const result = await runBatch(
      this.exec,
      unused.map((id) => `nexthop del id ${id}`),
    );
    const kept = new Set(result.failures.map((f) => f.index));
    nexthops.deleted(unused.filter((_, i) => !kept.has(i)));
  }

  private async applyLines(ops: readonly RouteOp[], lines: readonly string[]): Promise<BatchResult> {
    const out: BatchResult = { failures: [] };
    for (const phase of batchesOf(ops, this.splitAt)) {
      const results = await Promise.all(
        phase.map((b) =>
          runBatch(
            this.exec,
            b.indices.map((i) => lines[i]!),
            b.options,
          ),
        ),
      );
      results.forEach((result, n) => {
        const indices = phase[n]!.indices;
        out.failures.push(...result.failures.map((f) => ({ index: indices[f.index]!, message: f.message })));
      });
    }
    // In the order of the ops, as one batch reports them.
    out.failures.sort((a, b) => a.index - b.index);
    return out;
  }
}

/** Kilo's routes and rules on the machine `exec` runs on. */
export function linuxRoutingTables(exec: Exec, owner: Ownership = defaultOwnership): KiloRoutingTables {
  // One memo for the plan's texts and the kernel's, which are the same: docs/performance.md#address-memos.
  const addresses = new AddressMemo();
  return new KiloRoutingTables(new IprouteRoutes(exec, addresses), owner, addresses);
}
