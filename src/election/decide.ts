import type { KiloNode } from '../model/types.js';
import { electLeader } from '../mesh/topology.js';
import type { LeaseRecord } from '../backend/leases.js';
import type { ElectedLeader } from '../mesh/leaders.js';
import type { ElectionTiming } from './types.js';

/**
 * The election's decisions, pure (the clock and the Leases are arguments): who may contend in a
 * location, whether a Lease still binds, what a candidate does next, and who leads each location.
 */

/** The nodes of a location that share its segment (those without an internal IP stand alone). */
export function locationMembers(nodes: readonly KiloNode[], location: string): KiloNode[] {
  return nodes.filter((n) => n.location === location && n.internalIPs.length > 0);
}

/**
 * Who may lead: members with a usable endpoint and a key; if any of those carries
 * kilo.squat.ai/leader, only those (the operator's choice narrows the field, as in Kilo).
 */
export function eligible(members: readonly KiloNode[]): KiloNode[] {
  const usable = members.filter((n) => n.endpoint !== null && n.key !== null);
  const wanted = usable.filter((n) => n.wantsLeader);
  return wanted.length > 0 ? wanted : usable;
}

/** When a Lease stops binding others, by the observer's clock: renewTime + duration + skew. */
export function leaseExpiry(lease: LeaseRecord, timing: ElectionTiming): number | null {
  if (!lease.holder || lease.renewTime === null) return null;
  return lease.renewTime + lease.durationSeconds * 1000 + timing.skewMs;
}

/** The Lease binds: held, not expired, and its holder is still a member of the location. */
export function leaseBinds(
  lease: LeaseRecord | null,
  members: readonly KiloNode[],
  now: number,
  timing: ElectionTiming,
): lease is LeaseRecord & { holder: string } {
  if (!lease) return false;
  const expiry = leaseExpiry(lease, timing);
  if (expiry === null || now >= expiry) return false;
  // A holder deleted from the cluster (or no longer ready, or moved away) leads nothing.
  return members.some((n) => n.name === lease.holder);
}

export type Action =
  | { kind: 'create' }
  | { kind: 'acquire'; lease: LeaseRecord }
  | { kind: 'renew'; lease: LeaseRecord }
  | { kind: 'release'; lease: LeaseRecord }
  | { kind: 'wait'; until: number | null };

/**
 * What candidate `me` does now. `fit`: it may lead (eligible, healthy, dataplane working). A
 * holder that is no longer fit releases at once; a free or expired Lease is taken by a fit
 * candidate; a binding Lease held by another is waited out (no flapping: a recovered old
 * leader never takes a valid Lease back).
 */
export function nextAction(
  lease: LeaseRecord | null,
  me: string,
  fit: boolean,
  members: readonly KiloNode[],
  now: number,
  timing: ElectionTiming,
): Action {
  if (lease === null) return fit ? { kind: 'create' } : { kind: 'wait', until: null };
  if (lease.holder === me) return fit ? { kind: 'renew', lease } : { kind: 'release', lease };
  if (leaseBinds(lease, members, now, timing)) return { kind: 'wait', until: leaseExpiry(lease, timing) };
  return fit ? { kind: 'acquire', lease } : { kind: 'wait', until: null };
}

/**
 * The holder's own view: it leads until its last successful renewal (sent at `renewedAt` by
 * its clock) plus the duration, less the skew margin, so it stops before anyone may take over.
 */
export function holderLeads(renewedAt: number | null, now: number, timing: ElectionTiming): boolean {
  return renewedAt !== null && now < renewedAt + timing.durationMs - timing.skewMs;
}

/**
 * Each location's leader: the holder of its binding Lease, else Kilo's annotation rule
 * ('fallback'). `self`: this agent's own standing. `leads` overrides the Lease it observes (a
 * holder knows it renewed before others see it). `apiStale`: this agent has not reached the API
 * server for a Lease duration; it cannot tell a dead holder from its own isolation, so it keeps
 * every last-seen holder (with the API server down for everyone, nobody changes leadership).
 */
export function electedLeaders(
  nodes: readonly KiloNode[],
  leases: ReadonlyMap<string, LeaseRecord>,
  now: number,
  timing: ElectionTiming,
  self?: { name: string; location: string; leads: boolean; apiStale?: boolean },
): Map<string, ElectedLeader> {
  const out = new Map<string, ElectedLeader>();
  const locations = new Set(nodes.filter((n) => n.internalIPs.length > 0).map((n) => n.location));
  for (const location of locations) {
    const members = locationMembers(nodes, location);
    const lease = leases.get(location) ?? null;
    const mine = self !== undefined && self.location === location && members.some((n) => n.name === self.name);
    if (mine && self.leads) {
      out.set(location, { node: self.name, reason: 'lease' });
      continue;
    }
    const holder = lease?.holder ?? null;
    const kept = self?.apiStale === true && holder !== null && members.some((n) => n.name === holder);
    if (kept || leaseBinds(lease, members, now, timing)) {
      out.set(location, { node: holder!, reason: 'lease' });
      continue;
    }
    out.set(location, { node: electLeader(members).name, reason: 'fallback' });
  }
  return out;
}
