import type { KiloNode } from '../model/types.js';
import { eligible, electedLeaders, holderLeads, leaseExpiry, locationMembers, nextAction } from './decide.js';
import { LeaseConflict, type LeaseApi, type LeaseRecord } from '../backend/leases.js';
import { leaseName } from './lease-name.js';
import type { ElectedLeader } from '../mesh/leaders.js';
import type { ElectionTiming } from './types.js';

export interface ElectorEvents {
  acquired(location: string): void;
  released(location: string, why: string): void;
  renewalFailed(location: string, err: string): void;
}

/**
 * One agent's part in its location's Lease election, stepped by `tick()` (the runner owns the
 * timers, tests own the clock). The candidate set and fitness come from outside each step.
 */
export class Elector {
  /** When this node's last successful write of the Lease was sent, by its clock; null: not holding. */
  private renewedAt: number | null = null;
  private location: string | null = null;
  private nodes: readonly KiloNode[] = [];
  private unfitReason: string | null = null;
  /** When the API server last answered this node (by its clock). */
  private lastContact: number;

  constructor(
    private readonly api: LeaseApi,
    readonly identity: string,
    private readonly timing: ElectionTiming,
    private readonly clock: () => number,
    private readonly events: ElectorEvents,
  ) {
    this.lastContact = clock();
  }

  /** This node has not reached the API server for a Lease duration. */
  apiStale(): boolean {
    return this.clock() - this.lastContact > this.timing.durationMs;
  }

  /** The ready nodes and this node's location (null outside a location segment). */
  observe(nodes: readonly KiloNode[], location: string | null): void {
    this.nodes = nodes;
    this.location = location;
  }

  /** Why this node may not lead now (unhealthy dataplane, failing probes), or null. */
  setUnfit(reason: string | null): void {
    this.unfitReason = reason;
  }

  /** True while this node leads its location by its own clock. */
  leads(): boolean {
    return this.location !== null && holderLeads(this.renewedAt, this.clock(), this.timing);
  }

  /** Every location's leader as this node sees it now. */
  leaders(nodes: readonly KiloNode[]): Map<string, ElectedLeader> {
    const leases = new Map<string, LeaseRecord>();
    for (const n of nodes) {
      if (leases.has(n.location)) continue;
      const l = this.api.cached(leaseName(n.location));
      if (l) leases.set(n.location, l);
    }
    const self =
      this.location === null
        ? undefined
        : { name: this.identity, location: this.location, leads: this.leads(), apiStale: this.apiStale() };
    return electedLeaders(nodes, leases, this.clock(), this.timing, self);
  }

  /** The next moment some location's leadership may change without any write: a Lease expiring. */
  nextExpiry(): number | null {
    const now = this.clock();
    let next: number | null = null;
    const consider = (t: number | null) => {
      if (t !== null && t > now && (next === null || t < next)) next = t;
    };
    for (const loc of new Set(this.nodes.map((n) => n.location))) {
      const l = this.api.cached(leaseName(loc));
      if (l) consider(leaseExpiry(l, this.timing));
    }
    if (this.renewedAt !== null) consider(this.renewedAt + this.timing.durationMs - this.timing.skewMs);
    return next;
  }

  /** One step: take, keep, give up or wait for the Lease. Returns the delay until the next step. */
  async tick(): Promise<number> {
    const location = this.location;
    if (location === null) return this.timing.renewMs;
    const name = leaseName(location);
    const lease = this.api.cached(name);
    const now = this.clock();
    if (
      this.renewedAt !== null &&
      (lease?.holder !== this.identity || !holderLeads(this.renewedAt, now, this.timing))
    ) {
      // Taken by another after it expired for them, or expired by our own clock.
      this.renewedAt = null;
      this.events.released(location, lease?.holder !== this.identity ? 'taken over' : 'not renewed in time');
    }
    const members = locationMembers(this.nodes, location);
    const mayLead = eligible(members).some((n) => n.name === this.identity);
    const fit = mayLead && this.unfitReason === null;
    const action = nextAction(lease, this.identity, fit, members, now, this.timing);
    const base = {
      name,
      holder: this.identity,
      renewTime: now,
      durationSeconds: Math.round(this.timing.durationMs / 1000),
    };
    try {
      switch (action.kind) {
        case 'create':
          await this.api.create({ ...base, acquireTime: now, transitions: 0, resourceVersion: '' });
          this.lastContact = now;
          this.take(location, now);
          return this.timing.renewMs;
        case 'acquire':
          await this.api.update({
            ...action.lease,
            ...base,
            acquireTime: now,
            transitions: action.lease.transitions + (action.lease.holder === this.identity ? 0 : 1),
          });
          this.lastContact = now;
          this.take(location, now);
          return this.timing.renewMs;
        case 'renew': {
          const wasHolding = this.renewedAt !== null;
          await this.api.update({ ...action.lease, ...base });
          this.lastContact = now;
          if (wasHolding) this.renewedAt = now;
          else this.take(location, now);
          return this.timing.renewMs;
        }
        case 'release':
          await this.release(action.lease, mayLead ? (this.unfitReason ?? 'unfit') : 'no longer eligible');
          return this.timing.renewMs;
        case 'wait': {
          const until = action.until;
          // Proves the API server reachable (a holder's renewals do that for it).
          await this.api.get(name);
          this.lastContact = now;
          // Wake exactly when a binding Lease runs out, so takeover waits for no poll.
          if (until !== null) return Math.max(10, Math.min(this.timing.renewMs, until - now));
          return this.timing.renewMs;
        }
      }
    } catch (e) {
      if (action.kind === 'renew') this.events.renewalFailed(location, (e as Error).message);
      if (e instanceof LeaseConflict) {
        // Someone wrote first: read what they wrote before deciding again.
        await this.api.get(name).catch(() => null);
        return 100;
      }
      return Math.min(this.timing.renewMs, 1000);
    }
  }

  /** Gives the Lease up at once if this node holds it (shutdown, failing dataplane). */
  async resign(why: string): Promise<void> {
    const location = this.location;
    if (location === null) return;
    const lease = this.api.cached(leaseName(location));
    if (lease?.holder === this.identity) await this.release(lease, why);
  }

  private take(location: string, now: number): void {
    this.renewedAt = now;
    this.events.acquired(location);
  }

  private async release(lease: LeaseRecord, why: string): Promise<void> {
    const had = this.renewedAt !== null;
    this.renewedAt = null;
    // An empty holder frees the Lease for the next candidate now, not after its duration.
    await this.api.update({ ...lease, holder: null, renewTime: this.clock() });
    if (had) this.events.released(this.location ?? '', why);
  }
}
