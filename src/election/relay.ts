import type { Topology } from '../mesh/topology.js';
import { podProbeAddress } from '../mesh/probe-address.js';
import { remoteSegments } from '../mesh/topology.js';
import type { KiloNode, LeaderHealthReport } from '../model/types.js';
import type { ProbeTarget } from './probes.js';
import type { LeaseRecord } from '../backend/leases.js';

/**
 * Relay probes: a leader cannot test its own FORWARD path (its probes start on it and never
 * cross that chain), so its followers test it for it. Each follower pings the other locations'
 * leaders, which it reaches only through its own leader, and reports failures in its node's
 * kilo.squat.ai/leader-health; the leader reads the reports from the Nodes it watches. Pure.
 */

/** At most this many remote leaders per follower and round: a few packets a second per location. */
export const maxRelayTargets = 3;

/** The Lease term a follower probes through: its leader holds its location's Lease since `term`. */
export function relayTerm(t: Topology | null, lease: LeaseRecord | null): LeaderHealthReport | null {
  if (!t || t.granularity !== 'location' || t.local.leader) return null;
  const s = t.local.segment;
  if (s.leaderReason !== 'lease' || lease?.holder !== s.leader.name || lease.acquireTime === null) return null;
  return { leader: s.leader.name, term: lease.acquireTime };
}

/**
 * What a follower pings through its leader: the first address of each remote leader's pod CIDR
 * (relayed pod traffic takes that path), spread over the followers by their name so that each
 * remote leader is probed by some follower when there are more than `maxRelayTargets`.
 */
export function relayTargets(t: Topology): ProbeTarget[] {
  if (t.granularity !== 'location' || t.local.leader) return [];
  const remote = remoteSegments(t).filter((s) => s.leader.podCIDRs.length > 0);
  // In the clear to its own leader first: of two families, one both have an internal IP of.
  const target = (s: { leader: KiloNode }): ProbeTarget => ({
    kind: 'relay',
    node: s.leader.name,
    address: podProbeAddress(t.local.node, s.leader, t.local.segment.leader)!,
  });
  if (remote.length <= maxRelayTargets) return remote.map(target);
  const start = [...t.local.node.name].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7) % remote.length;
  return Array.from({ length: maxRelayTargets }, (_, i) => target(remote[(start + i) % remote.length]!));
}

/** The annotation value of a report (RFC 3339 term, readable and exact to the millisecond). */
export function formatLeaderHealth(r: LeaderHealthReport): string {
  return JSON.stringify({ leader: r.leader, term: new Date(r.term).toISOString() });
}

/**
 * A follower's side: after `rounds` failing rounds in a row through one leader's term it reports,
 * after as many passing rounds it withdraws. A new leader or term starts afresh, so a report
 * never outlives the term it is about.
 */
export class RelayReporter {
  private term: LeaderHealthReport | null = null;
  private failures = 0;
  private passes = 0;
  private report: LeaderHealthReport | null = null;

  constructor(private readonly rounds: number) {}

  /** One round: `failing` null when there was nothing to probe. Returns the report to publish. */
  round(term: LeaderHealthReport | null, failing: boolean | null): LeaderHealthReport | null {
    if (term?.leader !== this.term?.leader || term?.term !== this.term?.term) {
      this.term = term;
      this.failures = this.passes = 0;
      this.report = null;
    }
    if (term === null || failing === null) return this.report;
    if (failing) {
      this.passes = 0;
      if (++this.failures >= this.rounds) this.report = term;
    } else {
      this.failures = 0;
      if (++this.passes >= this.rounds) this.report = null;
    }
    return this.report;
  }

  current(): LeaderHealthReport | null {
    return this.report;
  }
}

/**
 * The leader's side: the followers that report its current term failing, out of those that count.
 * A follower counts when it is in the location and, if the leader's own probes have run, answers
 * them (a follower that is down neither complains nor dilutes). `remoteOk`: the leader's own
 * probes of the remote leaders mostly pass — when they fail too, the followers' failures say the
 * far side or the uplink is broken, which the leader's own probes judge, not its forwarding.
 */
export function forwardingComplaints(
  nodes: readonly KiloNode[],
  me: string,
  location: string,
  term: number,
  answering: ReadonlySet<string> | null,
): { complaining: string[]; counted: number } {
  const followers = nodes.filter(
    (n) => n.location === location && n.internalIPs.length > 0 && n.name !== me && (answering?.has(n.name) ?? true),
  );
  const complaining = followers
    .filter((n) => n.leaderHealth?.leader === me && n.leaderHealth.term === term)
    .map((n) => n.name);
  return { complaining, counted: followers.length };
}

/** Resign: most counted followers cannot get through, while the leader itself reaches the far side. */
export function forwardingDenied(c: { complaining: readonly string[]; counted: number }, remoteOk: boolean): boolean {
  return remoteOk && c.counted > 0 && c.complaining.length * 2 > c.counted;
}

/**
 * Once a leader resigned because its followers could not get through, it stays out for
 * `holdMs`: it cannot test its own forwarding, and taking the Lease straight back would flap.
 */
export class RelayVerdict {
  private heldUntil = 0;
  private why: string | null = null;

  constructor(private readonly holdMs: number) {}

  /** The reason this node may not lead now, or null; `complaining`: followers denied this round, if any. */
  judge(now: number, complaining: readonly string[] | null): string | null {
    if (complaining) {
      this.why = `followers' probes through this node fail: ${complaining.join(', ')}`;
      this.heldUntil = now + this.holdMs;
    }
    return now < this.heldUntil ? this.why : null;
  }
}
