import type { WireGuardState } from '../dataplane/types.js';
import type { Topology } from '../mesh/topology.js';

/** A read a second while a roaming peer's first handshake is most likely (WireGuard retries after 5 s). */
export const roamingReadMs = 1_000;
const everySecond = 5;
/** Reads per roaming peer at most: 5 a second apart, then after 2, 4, 8, 16 s (~35 s); then the resync timer's. */
export const roamingReadsPerPeer = everySecond + 4;

/** How long after its `reads`-th read without a handshake a roaming peer is read again. */
export function roamingReadDelayMs(reads: number): number {
  return reads < everySecond ? roamingReadMs : roamingReadMs * 2 ** (reads - everySecond + 1);
}

/**
 * Reads of the WireGuard device (Agent.readDevice: routes and firewall trusted to the last write)
 * for roaming segments (nodes behind NAT, `persistent-keepalive`: their endpoint is the one
 * WireGuard learns from their handshake) that no read has seen handshake yet. Until a read sees
 * the learned endpoint, the plan dials the one the node announced, often its internal IP, and then
 * withholds the route to that internal IP through the tunnel (mesh/plan.ts segmentPart): the node's
 * own traffic from that address (its path-health probes, anything its host sends) gets no answer,
 * and the endpoint is not published as discovered for the others. Passes that trust the last write
 * do not read WireGuard, so without these reads the learned endpoint waited for the resync timer
 * (30 s by default) or an unrelated full pass. Peers (kind Peer) are left out: no route of the plan
 * waits for their endpoint, and a cluster's many roaming Peers that never send would each cost reads.
 * A node that never handshakes costs a handful of reads, backing off, then none.
 */
export class RoamingReads {
  /** Reads made so far for each roaming segment's leader not seen handshaking, by public key. */
  private readonly waiting = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  /** The roaming segments' keys of the last topology, found once per topology (20,000 segments at scale). */
  private keysOf: { topology: Topology; keys: ReadonlySet<string> } | null = null;

  constructor(private readonly read: () => void) {}

  /**
   * After a pass that planned `topology`: `last`, the roaming peers as the last read saw them;
   * `readNow`, whether this pass made that read. Arms one read for the soonest segment due.
   */
  passed(topology: Topology, last: WireGuardState | null, readNow: boolean): void {
    const keys = this.roamingSegments(topology);
    if (keys.size === 0 && this.waiting.size === 0) return;
    const seen = new Set<string>();
    for (const p of last?.peers ?? []) if (p.latestHandshake > 0) seen.add(p.publicKey);
    for (const k of this.waiting.keys()) if (!keys.has(k) || seen.has(k)) this.waiting.delete(k);
    let soonest = Infinity;
    for (const k of keys) {
      if (seen.has(k)) continue;
      const before = this.waiting.get(k);
      // A segment new to the plan starts at 0; a read that still did not see it counts as one more.
      const reads = before === undefined ? 0 : before + (readNow ? 1 : 0);
      this.waiting.set(k, reads);
      if (reads < roamingReadsPerPeer) soonest = Math.min(soonest, roamingReadDelayMs(reads));
    }
    // Nobody waits any more (seen, or out of reads): a read armed for them is not wanted.
    if (soonest === Infinity) this.stop();
    if (soonest === Infinity || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.read();
    }, soonest);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private roamingSegments(topology: Topology): ReadonlySet<string> {
    if (this.keysOf?.topology === topology) return this.keysOf.keys;
    const keys = new Set<string>();
    // Its own segment is no peer; a follower has none but its leader (the remote ones are its leader's).
    if (topology.local.leader)
      for (const s of topology.segments)
        if (s !== topology.local.segment && s.leader.persistentKeepalive > 0 && s.leader.key) keys.add(s.leader.key);
    this.keysOf = { topology, keys };
    return keys;
  }
}
