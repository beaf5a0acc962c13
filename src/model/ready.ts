import { readinessWindowSeconds } from './annotations.js';
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
