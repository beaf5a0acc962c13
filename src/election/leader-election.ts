import type { Logger } from '../backend/source.js';
import type { Host } from '../host/host.js';
import type { Topology } from '../mesh/topology.js';
import type { KiloNode } from '../model/types.js';
import { DataPathHealth } from './health.js';
import type { LeaseApi } from '../backend/leases.js';
import { leaseName } from './lease-name.js';
import { Elector } from './elector.js';
import type { ElectionMetrics } from './metrics.js';
import { roundFails } from './probes.js';
import {
  RelayReporter,
  RelayVerdict,
  formatLeaderHealth,
  forwardingComplaints,
  forwardingDenied,
  relayTargets,
  relayTerm,
} from './relay.js';
import type { ElectedLeaders } from '../mesh/leaders.js';
import type { ElectionTiming } from './types.js';

/**
 * How the agent learns its location leaders: Kilo's annotation rule (the mesh decides alone, as
 * every Kilo agent does) or a Lease per location. The mesh takes the result as input.
 */
export interface LeaderElection {
  readonly mode: 'annotation' | 'lease';
  /** `onChange`: leadership may have changed, plan again. */
  start(onChange: () => void): Promise<void>;
  /** The leaders to plan with, given the ready nodes; undefined = Kilo's rule. */
  leaders(readyNodes: readonly KiloNode[], self: KiloNode | null): ElectedLeaders | undefined;
  /** Each reconcile's outcome: a dataplane failing for a while makes a leader resign. */
  reconciled(ok: boolean, topology: Topology | null): void;
  /** kilo.squat.ai/leader-health to publish: this follower's report on its leader, or null for none. */
  report(): string | null;
  /** Gives up any Lease held. */
  stop(): Promise<void>;
}

export const annotationElection: LeaderElection = {
  mode: 'annotation',
  start: () => Promise.resolve(),
  leaders: () => undefined,
  reconciled: () => {},
  report: () => null,
  stop: () => Promise.resolve(),
};

export interface LeaseElectionOptions {
  api: LeaseApi;
  /** Where the data-path probes run: pings and the kernel's forwarding decision. */
  host: Host;
  identity: string;
  interfaceName: string;
  timing: ElectionTiming;
  log: Logger;
  metrics: ElectionMetrics;
  clock?: () => number;
  /** Rounds of data-path probes this often. */
  probeIntervalMs?: number;
  /** Failing (or passing) rounds in a row before resigning (or contending again). */
  probeFailures?: number;
  /** A dataplane failing this long makes a leader resign. */
  dataplaneGraceMs?: number;
}

/** Lease-based election: contend, renew, resign on failure or shutdown, probe the data path. */
export class LeaseElection implements LeaderElection {
  readonly mode = 'lease';
  private readonly elector: Elector;
  private readonly health: DataPathHealth;
  private readonly clock: () => number;
  private onChange: () => void = () => {};
  private tickTimer: NodeJS.Timeout | null = null;
  private expiryTimer: NodeJS.Timeout | null = null;
  private probeTimer: NodeJS.Timeout | null = null;
  private ticking = false;
  private stopped = false;
  private topology: Topology | null = null;
  private failingSince: number | null = null;
  private probeReason: string | null = null;
  private ready: readonly KiloNode[] = [];
  private readonly relayReporter: RelayReporter;
  private readonly relayVerdict: RelayVerdict;

  constructor(private readonly o: LeaseElectionOptions) {
    this.clock = o.clock ?? Date.now;
    this.elector = new Elector(o.api, o.identity, o.timing, this.clock, {
      acquired: (location) => {
        o.metrics.holding.set(1);
        o.log.info({ location, node: o.identity }, 'acquired the location Lease');
        this.onChange();
      },
      released: (location, why) => {
        o.metrics.holding.set(0);
        o.log.info({ location, node: o.identity, why }, 'gave up the location Lease');
        this.onChange();
      },
      renewalFailed: (location, err) => {
        o.metrics.renewalFailures.inc({ location });
        o.log.warn({ location, err }, 'renewing the location Lease failed');
      },
    });
    this.relayReporter = new RelayReporter(o.probeFailures ?? 3);
    this.relayVerdict = new RelayVerdict(o.timing.durationMs);
    this.health = new DataPathHealth(
      o.host,
      { failuresToResign: o.probeFailures ?? 3, interfaceName: o.interfaceName },
      {
        probed: (t, ok) => {
          o.metrics.probe.set({ kind: t.kind, node: t.node }, ok ? 1 : 0);
          o.metrics.probes.inc({ kind: t.kind, result: ok ? 'ok' : 'failed' });
        },
        forwarding: (ok) => o.metrics.forwarding.set(ok ? 1 : 0),
      },
    );
  }

  async start(onChange: () => void): Promise<void> {
    this.onChange = onChange;
    await this.o.api.start(() => {
      this.onChange();
      this.armExpiry();
      this.wake(0);
    });
    this.probeTimer = setInterval(() => void this.probe(), this.o.probeIntervalMs ?? 1000);
  }

  leaders(readyNodes: readonly KiloNode[], self: KiloNode | null): ElectedLeaders {
    const inSegment = self !== null && self.internalIPs.length > 0;
    this.elector.observe(readyNodes, inSegment ? self.location : null);
    const out = this.elector.leaders(readyNodes);
    this.ready = readyNodes;
    // A follower's report may just have arrived: judge it now, not at the next probe.
    this.refit();
    this.armExpiry();
    if (this.tickTimer === null && !this.ticking) this.wake(0);
    return out;
  }

  reconciled(ok: boolean, topology: Topology | null): void {
    this.topology = topology;
    const now = this.clock();
    if (ok) this.failingSince = null;
    else this.failingSince ??= now;
    this.refit();
  }

  report(): string | null {
    const r = this.relayReporter.current();
    return r ? formatLeaderHealth(r) : null;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of [this.tickTimer, this.expiryTimer]) if (t) clearTimeout(t);
    if (this.probeTimer) clearInterval(this.probeTimer);
    await this.elector
      .resign('shutting down')
      .catch((e: unknown) => this.o.log.warn({ err: (e as Error).message }, 'releasing the location Lease failed'));
    await this.o.api.stop();
  }

  private refit(): void {
    const grace = this.o.dataplaneGraceMs ?? 3000;
    const dataplane =
      this.failingSince !== null && this.clock() - this.failingSince >= grace ? 'the dataplane keeps failing' : null;
    const reason = dataplane ?? this.probeReason ?? this.relayVerdict.judge(this.clock(), this.denied());
    this.elector.setUnfit(reason);
    if (reason && this.elector.leads()) this.wake(0);
  }

  /** The followers that cannot get through this leader, when they are most of those that count. */
  private denied(): string[] | null {
    const t = this.topology;
    const own = this.health.lastLeaderRound();
    if (!t || !own || !this.elector.leads()) return null;
    const location = t.local.node.location;
    const lease = this.o.api.cached(leaseName(location));
    if (lease?.holder !== this.o.identity || lease.acquireTime === null) return null;
    const c = forwardingComplaints(this.ready, this.o.identity, location, lease.acquireTime, own.answering);
    this.o.metrics.relayComplaints.set(c.complaining.length);
    return forwardingDenied(c, own.remoteOk) ? c.complaining : null;
  }

  private async probe(): Promise<void> {
    if (this.stopped) return;
    const leading = this.elector.leads();
    // The relay round runs on a leader too: it has no leader to report on, so it withdraws.
    const [reason] = await Promise.all([this.health.round(leading ? this.topology : null), this.relayRound()]);
    this.probeReason = reason;
    this.refit();
  }

  /** A follower's round: ping remote leaders through its leader; report or withdraw (and publish). */
  private async relayRound(): Promise<void> {
    const t = this.topology;
    const term = relayTerm(t, t ? this.o.api.cached(leaseName(t.local.node.location)) : null);
    const targets = t && term ? relayTargets(t) : [];
    const results = await Promise.all(targets.map((p) => this.o.host.ping(p.address)));
    targets.forEach((p, i) => {
      this.o.metrics.probe.set({ kind: p.kind, node: p.node }, results[i] ? 1 : 0);
      this.o.metrics.probes.inc({ kind: p.kind, result: results[i] ? 'ok' : 'failed' });
    });
    const before = this.report();
    const after = this.relayReporter.round(term, targets.length > 0 ? roundFails(results, null) : null);
    if (this.report() === before) return;
    if (after)
      this.o.log.warn({ leader: after.leader, targets: targets.map((p) => p.node) }, 'probes through the leader fail');
    else this.o.log.info({ leader: term?.leader ?? null }, 'withdrew the report on the leader');
    this.onChange();
  }

  private wake(delayMs: number): void {
    if (this.stopped) return;
    if (this.tickTimer) clearTimeout(this.tickTimer);
    this.tickTimer = setTimeout(() => void this.step(), delayMs);
  }

  private async step(): Promise<void> {
    this.tickTimer = null;
    if (this.ticking || this.stopped) return;
    this.ticking = true;
    let next = this.o.timing.renewMs;
    try {
      next = await this.elector.tick();
    } finally {
      this.ticking = false;
    }
    this.armExpiry();
    if (this.tickTimer === null) this.wake(next);
  }

  /** Plans again when a Lease runs out, so a dead leader's location falls back or moves on at once. */
  private armExpiry(): void {
    if (this.stopped) return;
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    const at = this.elector.nextExpiry();
    if (at === null) return;
    this.expiryTimer = setTimeout(
      () => {
        this.expiryTimer = null;
        this.onChange();
        this.wake(0);
      },
      Math.max(0, at - this.clock()) + 5,
    );
  }
}
