import { ExecError, type Exec } from '../exec.js';
import type { Family } from '../../net/cidr.js';
import { AddressMemo } from '../../net/memo.js';
import { runBatch, type BatchResult } from './batch.js';
import type { RouteOp } from './diff.js';
import { batchesOf, defaultSplitAt } from './schedule.js';
import { parseRoutes, parseRules, renderOps } from './iproute.js';
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
    texts: [string, string][];
    routing: KiloRouting;
  } | null = null;

  /**
   * @param addresses best the routes reconciler's own, as linuxRoutingTables does: the kernel's
   * texts are the plan's. Its passes are then the reconciler's: a read that began one too would
   * size it by the read alone, which asks for few texts (routes equal to the plan's are taken
   * whole), and the next plan would find it emptied and parse every route again.
   */
  constructor(
    private readonly exec: Exec,
    addresses?: AddressMemo,
    /** Free routes from which a batch is split in two (see batchesOf). */
    private readonly splitAt = defaultSplitAt,
  ) {
    this.addresses = addresses ?? new AddressMemo();
    this.ownsMemo = addresses === undefined;
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
    const texts = await Promise.all(
      reads.map((r) => Promise.all([this.show(r.family, r.routes), this.show(r.family, r.rules)])),
    );
    // Listed by Kilo's protocol: any route is one of Kilo's (and a megabyte is not parsed to say so).
    const empty = texts.every(
      ([routes, rules], i) =>
        /^\s*(\[\s*\])?\s*$/.test(routes) && parseRules(rules, reads[i]!.family, owner.priority).length === 0,
    );
    return { empty, parse: (expected) => this.parse(owner, texts, expected) };
  }

  private parse(owner: Ownership, texts: [string, string][], expected?: ReadonlyMap<string, KernelRoute>): KiloRouting {
    if (this.ownsMemo) this.addresses.nextPass();
    const reads = this.reads(owner);
    const last = this.last;
    if (
      last?.owner === owner &&
      last.expected === expected &&
      last.texts.every((t, i) => t[0] === texts[i]![0] && t[1] === texts[i]![1])
    )
      return last.routing;
    const families = reads.map((r, i) => ({
      routes: parseRoutes(texts[i]![0], r.family, owner.protocol, this.addresses, expected),
      rules: parseRules(texts[i]![1], r.family, owner.priority, this.addresses),
    }));
    const routing = { routes: families.flatMap((f) => f.routes), rules: families.flatMap((f) => f.rules) };
    this.last = { owner, expected, texts, routing };
    return routing;
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
    const lines = renderOps(ops);
    await after;
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
