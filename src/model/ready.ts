import { lastSeenIntervalSeconds, readinessWindowSeconds } from './annotations.js';
import type { KiloNode, KiloPeer } from './types.js';

/** Ready = has an endpoint, a key and a pod CIDR, and checked in within the readiness window of `now`. */
export function isNodeReady(node: KiloNode, now: number): boolean {
  return (
    node.endpoint !== null &&
    node.key !== null &&
    node.podCIDR !== null &&
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
  const seen = nodes
    .map((n) => n.lastSeen)
    .filter((s): s is number => s !== null)
    .sort((a, b) => a - b);
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
