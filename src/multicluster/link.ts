/**
 * Two clusters kept linked: each one's nodes as Peers of the other and its exported Services as
 * selector-less Services with EndpointSlices in the other, rewritten whenever that changes. I/O
 * edge around the pure part (peers.ts, services.ts, ranges.ts, diff.ts).
 *
 * Nodes and Peers of both clusters are watched (backend's reflectors): a change recomputes the
 * Peers, and only a difference from what was last written costs a write pass, so heartbeats cost
 * a computation, not requests. Every `resyncMs` a full pass lists what the controller owns and
 * the exported Services, and repairs drift (a Peer edited or deleted by hand, a node gone stale
 * without any event). Passes run one at a time.
 */
import type { ClusterSource, Logger } from '../backend/source.js';
import type { KubeObject } from '../model/parse.js';
import { ClusterApi, peerKind, serviceKind, sliceKind } from './api.js';
import { keyOf, namespaceOf, ownedBy, planChanges, type Change } from './diff.js';
import { mirroredPeers } from './peers.js';
import { overlapError } from './ranges.js';
import { mirroredServices } from './services.js';
import { exportLabel, sourceLabel, type ClusterView } from './view.js';

/** One cluster of the link. */
export interface Side {
  api: ClusterApi;
  /** Its Nodes and Peers, watched. */
  source: ClusterSource;
  /** How the controller reads it: parsed, with its mesh options and service range. */
  view(objects: readonly KubeObject[], now: number): ClusterView;
}

export interface LinkOptions {
  /** Full passes this often. */
  resyncMs: number;
  /** Changes closer together than this make one pass. */
  debounceMs: number;
  logger: Logger;
}

export const defaultLinkOptions: Omit<LinkOptions, 'logger'> = { resyncMs: 10_000, debounceMs: 200 };

export class Link {
  private lastPeers = '';
  private timer: NodeJS.Timeout | undefined;
  private resync: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private pending: 'none' | 'peers' | 'full' = 'none';
  private readonly reported = new Map<'overlap' | 'peers' | 'services', Set<string>>();
  private stopped = false;

  constructor(
    private readonly a: Side,
    private readonly b: Side,
    private readonly o: LinkOptions,
  ) {}

  /**
   * Reads both clusters and makes the first full pass; throws (writing nothing) when their ranges
   * overlap or a cluster cannot be read. Then keeps them in step until `stop()`.
   */
  async start(): Promise<void> {
    await Promise.all([this.a.source.start(), this.b.source.start()]);
    // Listening before the first pass: a change during it makes the next one, not a wait for the resync.
    for (const side of [this.a, this.b]) side.source.onChange(() => this.schedule('peers'));
    const first = this.pass('full', true);
    this.running = first.catch(() => {});
    try {
      await first;
    } finally {
      this.running = undefined;
    }
    this.resync = setInterval(() => this.schedule('full'), this.o.resyncMs);
    if (this.pending !== 'none') void this.drain();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.resync);
    await this.running;
    await Promise.all([this.a.source.stop(), this.b.source.stop()]);
  }

  private schedule(kind: 'peers' | 'full'): void {
    if (this.stopped) return;
    if (kind === 'full' || this.pending === 'none') this.pending = kind;
    if (this.timer || this.running) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.drain();
    }, this.o.debounceMs);
  }

  private async drain(): Promise<void> {
    while (this.pending !== 'none' && !this.stopped) {
      const kind = this.pending;
      this.pending = 'none';
      this.running = this.pass(kind, false).catch((e: unknown) =>
        this.o.logger.error(
          { err: (e as Error).message },
          'multicluster pass failed; retried at the next change or resync',
        ),
      );
      await this.running;
      this.running = undefined;
    }
  }

  /** Errors and conflicts are logged once while they last, not at every pass (each topic by the passes that look at it). */
  private report(topic: 'overlap' | 'peers' | 'services', messages: readonly string[]): void {
    const before = this.reported.get(topic);
    for (const m of messages) if (!before?.has(m)) this.o.logger.error({}, m);
    this.reported.set(topic, new Set(messages));
  }

  private async pass(kind: 'peers' | 'full', first: boolean): Promise<void> {
    const now = Math.floor(Date.now() / 1000);
    const va = this.a.view(this.a.source.objects(), now);
    const vb = this.b.view(this.b.source.objects(), now);
    const overlap = overlapError(va, vb);
    if (overlap) {
      if (first) throw new Error(overlap);
      return this.report('overlap', [overlap]);
    }
    this.report('overlap', []);
    const intoB = mirroredPeers(va);
    const intoA = mirroredPeers(vb);
    const text = JSON.stringify([intoA, intoB]);
    if (kind === 'peers' && text === this.lastPeers) return;
    const conflicts: string[] = [];
    for (const [to, wanted, from] of [
      [this.a, intoA, vb.name],
      [this.b, intoB, va.name],
    ] as const) {
      const existing = to.source.objects().filter((o) => o.kind === 'Peer');
      const plan = planChanges(wanted, existing, from);
      conflicts.push(...plan.conflicts);
      await this.carryOut(to.api, plan.changes);
    }
    this.lastPeers = text;
    this.report('peers', conflicts);
    if (kind === 'full')
      this.report('services', [
        ...(await this.services(this.a, this.b, va.name)),
        ...(await this.services(this.b, this.a, vb.name)),
      ]);
  }

  /** The exported Services of `from` mirrored into `to`; the problems found. */
  private async services(from: Side, to: Side, fromName: string): Promise<string[]> {
    const wanted = mirroredServices(fromName, await from.api.list(serviceKind, `${exportLabel}=true`));
    const present = await to.api.list(serviceKind);
    const services = planChanges(
      wanted.objects.filter((o) => o.kind === 'Service'),
      present,
      fromName,
    );
    // No slice for a Service that is someone else's: it would add endpoints to their Service.
    const theirs = new Set(present.filter((o) => !ownedBy(o, fromName)).map(keyOf));
    const slices = planChanges(
      wanted.objects.filter(
        (o) =>
          o.kind === 'EndpointSlice' &&
          !theirs.has(`${namespaceOf(o)}/${o.metadata?.labels?.['kubernetes.io/service-name'] ?? ''}`),
      ),
      await to.api.list(sliceKind, `${sourceLabel}=${fromName}`),
      fromName,
    );
    await this.carryOut(
      to.api,
      services.changes.filter((c) => c.op !== 'delete'),
    );
    await this.carryOut(to.api, slices.changes);
    await this.carryOut(
      to.api,
      services.changes.filter((c) => c.op === 'delete'),
    );
    return [...wanted.errors, ...services.conflicts, ...slices.conflicts];
  }

  private async carryOut(api: ClusterApi, changes: readonly Change[]): Promise<void> {
    for (const c of changes) {
      await api.apply(c);
      const o = c.object;
      this.o.logger.info(
        { cluster: api.name, kind: o.kind, name: keyOf(o).replace(/^\//, '') },
        `${c.op === 'create' ? 'created' : c.op === 'replace' ? 'updated' : 'deleted'} ${o.kind ?? ''}`,
      );
    }
  }
}

/**
 * Removes everything the link made: in each cluster, the Peers, Services and EndpointSlices
 * mirrored from the other (by the owner label). Returns how many objects were deleted.
 */
export async function unlink(a: ClusterApi, b: ClusterApi): Promise<number> {
  let n = 0;
  for (const [to, from] of [
    [a, b.name],
    [b, a.name],
  ] as const) {
    for (const kind of [peerKind, sliceKind, serviceKind]) {
      const owned = await to.list(kind, `${sourceLabel}=${from}`);
      for (const object of owned) await to.apply({ op: 'delete', object });
      n += owned.length;
    }
  }
  return n;
}
