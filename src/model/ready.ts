import { lastSeenIntervalSeconds, readinessWindowSeconds } from './annotations.js';
import type { KiloNode, KiloPeer } from './types.js';

/** Ready = has an endpoint, a key and a pod CIDR, and checked in within the readiness window of `now`. */
export function isNodeReady(node: KiloNode, now: number): boolean {
  return (
    node.endpoint !== null &&
    node.key !== null &&
    node.podCIDRs.length > 0 &&
    node.lastSeen !== null &&
    now - node.lastSeen <= readinessWindowSeconds
  );
}

export function isPeerReady(peer: KiloPeer): boolean {
  return peer.allowedIPs.length > 0 && peer.publicKey !== '';
}

/**
 * Offline "now": the newest last-seen in the snapshot, so a saved snapshot stays readable later —
 * but judged by the crowd. It is the end of the readiness window that holds the most check-ins
 * (the newest such window on a tie), so one node with a far-future last-seen (a wrong clock, a
 * typo) cannot make itself "now" and every other node stale. With check-ins in one window, as in
 * any snapshot of a healthy cluster, that is simply the newest last-seen.
 */
export function snapshotNow(nodes: readonly KiloNode[]): number {
  // Sorted natively, not by a comparator: docs/performance.md#cold-code.
  const all = new Float64Array(nodes.length);
  let n = 0;
  for (let i = 0; i < nodes.length; i++) {
    const s = nodes[i]!.lastSeen;
    if (s !== null) all[n++] = s;
  }
  const seen = all.subarray(0, n).sort();
  let now = 0;
  let best = 0;
  let from = 0;
  for (let to = 0; to < seen.length; to++) {
    while (seen[to]! - seen[from]! > readinessWindowSeconds) from++;
    const count = to - from + 1;
    if (count >= best) {
      best = count;
      now = seen[to]!;
    }
  }
  return now;
}

/**
 * The time node readiness is judged at: now, but never later than one check-in interval after the
 * newest last-seen in the cluster. While the cluster is reachable some node (at least this one)
 * checks in every interval, so this is now; while the API server is away nobody's last-seen can
 * move, and judging at "now" would drop every node from the mesh one by one (Kilo does).
 */
export function readinessTime(nodes: readonly KiloNode[], now: number): number {
  let newest = -Infinity;
  for (const n of nodes) if (n.lastSeen !== null && n.lastSeen > newest) newest = n.lastSeen;
  return Math.min(now, newest + lastSeenIntervalSeconds);
}

/**
 * What readiness remembers between judgements (an agent's passes, the chaos checker's polls): the
 * newest last-seen seen, and whether readiness is held after a silence.
 */
export interface ReadinessMemory {
  readonly newest: number;
  /** Readiness judged at `at` (where it froze during the silence) until `until` (unix seconds). */
  readonly held: { readonly at: number; readonly until: number } | null;
}

/**
 * How long readiness stays as it froze once check-ins resume after a silence: every agent checks in
 * on its next tick (one interval), plus time for the write and for the watch to bring it.
 */
export const resumeGraceSeconds = lastSeenIntervalSeconds + 15;

/**
 * No check-in anywhere for longer than this is a silence: one interval, plus slack for ticks
 * landing late on a loaded machine (a lone agent's own check-ins come 30–31 s apart).
 */
export const silenceSeconds = lastSeenIntervalSeconds + 10;

/**
 * Folds one check-in (a node's last-seen) into the memory, in O(1). A check-in a silence after the
 * newest seen ends it — the API server was away, or this observer cut off: readinessTime froze
 * meanwhile, and judging at "now" the moment the first node checks in again would drop every node
 * that has not had its turn yet (nodes are 60 s and more behind by then), to add each back as it
 * checks in. So readiness stays where it froze until every node has had its turn; a node that has
 * not checked in by then drops out. (Always where this silence froze it, so that a run of
 * silences, real or a late tick's, cannot keep a dead node ready.)
 */
export function rememberCheckIn(memory: ReadinessMemory | null, lastSeen: number): ReadinessMemory {
  if (!memory) return { newest: lastSeen, held: null };
  if (lastSeen <= memory.newest) return memory;
  if (lastSeen - memory.newest > silenceSeconds)
    return {
      newest: lastSeen,
      held: { at: memory.newest + lastSeenIntervalSeconds, until: lastSeen + resumeGraceSeconds },
    };
  return { ...memory, newest: lastSeen };
}

/**
 * The time to judge node readiness at, for an observer that keeps judging (an agent): the
 * readiness time, or the one it froze at while check-ins are resuming after a silence
 * (rememberCheckIn). Returns the memory for the next call; null memory means a first judgement.
 */
export function judgeReadiness(
  memory: ReadinessMemory | null,
  nodes: readonly KiloNode[],
  now: number,
): { at: number; memory: ReadinessMemory | null } {
  let m = memory;
  // The first check-in after the newest remembered tells whether a silence ended meanwhile.
  let first = Infinity;
  let newest = -Infinity;
  for (const n of nodes) {
    if (n.lastSeen === null) continue;
    if (n.lastSeen > (m?.newest ?? -Infinity) && n.lastSeen < first) first = n.lastSeen;
    if (n.lastSeen > newest) newest = n.lastSeen;
  }
  if (m && Number.isFinite(first)) m = rememberCheckIn(m, first);
  if (Number.isFinite(newest) && newest > (m?.newest ?? -Infinity)) m = { newest, held: m?.held ?? null };
  if (m?.held && now >= m.held.until) m = { ...m, held: null };
  return { at: m?.held ? Math.min(m.held.at, now) : readinessTime(nodes, now), memory: m };
}
