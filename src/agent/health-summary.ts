/**
 * What a node publishes of its paths' health in kilo.squat.ai/path-health (and what kgctl status
 * and the lab read back): counts, and at most `maxListed` failing pairs with their reasons, so the
 * annotation stays under a few KiB whatever the cluster's size.
 */
export interface FailingPath {
  node: string;
  path: 'private' | 'wireguard';
  reason: string;
}

export interface PathHealthSummary {
  pairs: { ok: number; failing: number; unknown: number };
  /** The WireGuard device's peers by their latest handshake: within `handshakeRecentSeconds`, older, never. */
  handshakes: { recent: number; stale: number; never: number };
  /** The first `maxListed` failing pairs (by node name). */
  failing: FailingPath[];
  /** Failing pairs not listed. */
  more: number;
}

export const maxListed = 8;

/** Nothing probed, nothing failing: where a node starts. */
export const emptySummary: PathHealthSummary = {
  pairs: { ok: 0, failing: 0, unknown: 0 },
  handshakes: { recent: 0, stale: 0, never: 0 },
  failing: [],
  more: 0,
};
/** WireGuard re-keys every 2 minutes while traffic flows and drops a session after 3: older is stale. */
export const handshakeRecentSeconds = 180;
const maxReason = 240;

export function formatPathHealth(s: PathHealthSummary): string {
  const failing = s.failing.slice(0, maxListed).map((f) => ({ ...f, reason: f.reason.slice(0, maxReason) }));
  return JSON.stringify({ ...s, failing, more: s.more + (s.failing.length - failing.length) });
}

/**
 * Which pairs fail, and why: a change of it is published at once. The other counts (pairs found
 * working, handshakes) move as probing sweeps on and with time alone, so they wait for a check-in.
 * So do the figures inside a reason (probes in a row, seconds since a handshake): with them a pair
 * that keeps failing was a new state every probe round, and each asked for a pass.
 */
export function pathStateKey(s: PathHealthSummary | null): string {
  if (!s) return '';
  const failing = s.failing.map((f) => [f.node, f.path, f.reason.replace(/\d+/g, '#')]);
  return JSON.stringify([s.pairs.failing, failing, s.more]);
}

const count = (v: unknown): number => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : 0);

/** Reads an annotation back; null for an absent or unreadable one (another version's, a hand edit). */
export function parsePathHealth(text: string | undefined): PathHealthSummary | null {
  if (!text) return null;
  let o: unknown;
  try {
    o = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof o !== 'object' || o === null) return null;
  const r = o as Record<string, Record<string, unknown> | unknown[] | undefined>;
  const pairs = (r['pairs'] ?? {}) as Record<string, unknown>;
  const hs = (r['handshakes'] ?? {}) as Record<string, unknown>;
  const failing = Array.isArray(r['failing']) ? r['failing'] : [];
  return {
    pairs: { ok: count(pairs['ok']), failing: count(pairs['failing']), unknown: count(pairs['unknown']) },
    handshakes: { recent: count(hs['recent']), stale: count(hs['stale']), never: count(hs['never']) },
    failing: failing.slice(0, maxListed).flatMap((f: unknown) => {
      const x = f as Record<string, unknown> | null;
      if (!x || typeof x['node'] !== 'string' || typeof x['reason'] !== 'string') return [];
      const path = x['path'] === 'wireguard' ? 'wireguard' : 'private';
      return [{ node: x['node'], path, reason: x['reason'].slice(0, maxReason) }];
    }),
    more: count(r['more']),
  };
}
