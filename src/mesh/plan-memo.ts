import type { Cidr, IP } from '../net/cidr.js';
import type { Endpoint, KiloNode } from '../model/types.js';
import type { Encapsulator } from '../encapsulation/index.js';
import type { MeshOptions } from './options.js';
import type { Segment } from './topology.js';
import type { PlanPeer, PlanRoute } from './types.js';

/** What one remote segment puts into a leader's plan: its WireGuard peer and its routes through kilo. */
export interface SegmentPart {
  readonly peer: PlanPeer;
  readonly routes: readonly PlanRoute[];
}

/** A part and the inputs it was made from. */
interface Entry {
  leader: string;
  nodes: readonly KiloNode[];
  wireGuardIPs: readonly IP[];
  allowedLocationIPs: readonly Cidr[];
  allowedIPs: readonly Cidr[];
  endpoint: Endpoint | null;
  part: SegmentPart;
  /** The pass that last used it: entries a pass did not use are dropped at its end. */
  pass: number;
}

/**
 * The last plan's part of each remote segment, for the agent, which plans the same mesh pass after
 * pass: a join at 20,000 nodes changes one segment and the heartbeats a few hundred node objects,
 * and planning the other 19,000 peers and 40,000 routes afresh made most of a join's plan, and most
 * of the garbage the agent collects (docs/performance.md, "The plan's parts kept"). One memo per
 * planner (the agent's), never module state: kgctl plans once and passes none.
 *
 * A part is reused only when everything it was made from is equal in value: the segment's members
 * (the same objects, or as far as the part reads them: name, key, pod CIDRs, internal IPs) and its
 * leader, its
 * WireGuard IPs, its allowed-location IPs after filtering and the endpoint the local node dials;
 * and the pass's context: the options and encapsulator (the same objects) and the local node as
 * the parts read it (name, keep-alive, internal IPs). A part's objects are shared by the plans of
 * every pass that reuses them: nothing downstream may change a plan in place (none does: the agent
 * and relays copy what they change).
 */
export class PlanMemo {
  private readonly entries = new Map<string, Entry>();
  private pass = 0;
  private context: { options: MeshOptions; enc: Encapsulator; self: KiloNode } | null = null;

  /** Starts a pass: a changed context drops every part. */
  begin(options: MeshOptions, enc: Encapsulator, self: KiloNode): void {
    this.pass++;
    const c = this.context;
    if (
      !c ||
      c.options !== options ||
      c.enc !== enc ||
      (c.self !== self &&
        (c.self.name !== self.name ||
          c.self.persistentKeepalive !== self.persistentKeepalive ||
          !sameCidrs(c.self.internalIPs, self.internalIPs)))
    )
      this.entries.clear();
    this.context = { options, enc, self };
  }

  /** The segment's part, the last pass's when its inputs are equal, else `make`'s (kept for the next pass). */
  part(s: Segment, endpoint: Endpoint | null, make: () => SegmentPart): SegmentPart {
    const last = this.entries.get(s.key);
    if (
      last &&
      last.leader === s.leader.name &&
      sameEndpoint(last.endpoint, endpoint) &&
      sameMembers(last.nodes, s.nodes) &&
      sameIPs(last.wireGuardIPs, s.wireGuardIPs) &&
      sameCidrs(last.allowedLocationIPs, s.allowedLocationIPs) &&
      // Made from the above today; compared too, so that a topology that one day derives them
      // from more cannot be served a stale peer.
      sameCidrs(last.allowedIPs, s.allowedIPs)
    ) {
      last.pass = this.pass;
      // The newer objects: the next comparison is then most often one of identity.
      last.nodes = s.nodes;
      return last.part;
    }
    const part = make();
    this.entries.set(s.key, {
      leader: s.leader.name,
      nodes: s.nodes,
      wireGuardIPs: s.wireGuardIPs,
      allowedLocationIPs: s.allowedLocationIPs,
      allowedIPs: s.allowedIPs,
      endpoint,
      part,
      pass: this.pass,
    });
    return part;
  }

  /** Ends a pass: the parts of segments it did not plan (gone, or a follower's pass) are dropped. */
  end(): void {
    for (const [key, e] of this.entries) if (e.pass !== this.pass) this.entries.delete(key);
  }

  /** How many parts are kept (for tests). */
  get size(): number {
    return this.entries.size;
  }
}

/** Two lists of equal length whose items are the same objects or `equal`. */
function sameList<T>(a: readonly T[], b: readonly T[], equal: (x: T, y: T) => boolean): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i] && !equal(a[i]!, b[i]!)) return false;
  return true;
}

/** A heartbeat makes a new object of an unchanged node: compared as far as a part reads it. */
const sameMembers = (a: readonly KiloNode[], b: readonly KiloNode[]) =>
  sameList(
    a,
    b,
    (x, y) =>
      x.name === y.name &&
      x.key === y.key &&
      sameCidrs(x.podCIDRs, y.podCIDRs) &&
      sameCidrs(x.internalIPs, y.internalIPs),
  );

/** Equal addresses with equal masks (host bits too: an internal IP is an address with its mask). */
const sameCidrs = (a: readonly Cidr[], b: readonly Cidr[]) =>
  sameList(a, b, (x, y) => x.prefix === y.prefix && x.ip.equals(y.ip));

const sameIPs = (a: readonly IP[], b: readonly IP[]) => sameList(a, b, (x, y) => x.equals(y));

function sameEndpoint(a: Endpoint | null, b: Endpoint | null): boolean {
  if (a === b) return true;
  if (!a || !b) return false;
  return a.port === b.port && a.dns === b.dns && (a.ip === b.ip || (!!a.ip && a.ip.equals(b.ip)));
}
