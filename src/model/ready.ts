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

/** Offline "now": the newest last-seen in the snapshot, so a saved snapshot stays readable later. */
export function snapshotNow(nodes: readonly KiloNode[]): number {
  let now = 0;
  for (const n of nodes) if (n.lastSeen !== null && n.lastSeen > now) now = n.lastSeen;
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
