import type { ObjectUpdate } from '../backend/source.js';
import { Annotation } from '../model/annotations.js';

/**
 * Annotations no plan reads (parseNode leaves them out): kilo.squat.ai/path-health rides along with
 * every check-in of a kilo-ts agent (local-node.ts), its handshake times moved, so with it counted
 * every node's heartbeat would plan. kgctl status reads it; the agent reads only its own, from the
 * source, when it publishes.
 */
const unplanned: ReadonlySet<string> = new Set([Annotation.pathHealth]);

/**
 * True when an update moves nothing the mesh reads but a Node's last-seen, and moves it forwards (or
 * leaves it). Every agent rewrites its node's last-seen once per check-in interval, with its
 * path-health beside it, so these are most of a big cluster's events
 * (docs/performance.md#heartbeats-and-passes); the mesh reads last-seen only through readiness, and
 * a newer last-seen cannot make a ready node unready. Unsure (different shape, key order) means
 * false: a recompute too many is harmless.
 */
export function onlyLastSeenMoved({ previous, current }: ObjectUpdate): boolean {
  if (previous.kind !== 'Node' || current.kind !== 'Node') return false;
  const before = previous.metadata?.annotations ?? {};
  const after = current.metadata?.annotations ?? {};
  const was = Number(before[Annotation.lastSeen]);
  const now = Number(after[Annotation.lastSeen]);
  if (!(Number.isFinite(was) && Number.isFinite(now) && now >= was)) return false;
  return (
    sameAnnotationsBut(before, after) &&
    sameJSON(previous.metadata?.labels, current.metadata?.labels) &&
    sameJSON(previous.spec, current.spec)
  );
}

/** The same annotations, last-seen and those no plan reads left out (each may come or go). */
function sameAnnotationsBut(a: Record<string, string>, b: Record<string, string>): boolean {
  let left = 0;
  for (const k of Object.keys(a)) {
    if (k === Annotation.lastSeen || unplanned.has(k)) continue;
    if (!Object.prototype.hasOwnProperty.call(b, k) || a[k] !== b[k]) return false;
    left++;
  }
  let right = 0;
  for (const k of Object.keys(b)) if (k !== Annotation.lastSeen && !unplanned.has(k)) right++;
  return left === right;
}

/** Labels and spec: maps of strings mostly, compared key by key (at every heartbeat). */
function sameJSON(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (!isRecord(a) || !isRecord(b)) return JSON.stringify(a) === JSON.stringify(b);
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  for (const k of keys) {
    if (!Object.prototype.hasOwnProperty.call(b, k)) return false;
    const x = a[k];
    const y = b[k];
    if (x !== y && (typeof x !== 'object' || typeof y !== 'object' || JSON.stringify(x) !== JSON.stringify(y)))
      return false;
  }
  return true;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
