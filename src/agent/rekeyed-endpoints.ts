import type { WireGuardState } from '../dataplane/types.js';
import type { Plan } from '../mesh/types.js';
import { liveHandshakeSeconds } from './roaming.js';

/**
 * The segments of `plan` whose key changed since `last` (their node rotated it:
 * docs/key-rotation.md): plan peer index → the key the segment had. A segment is recognised by its
 * nodes' names.
 */
export function rekeyedSegments(plan: Plan, last: Plan | null): Map<number, string> {
  const out = new Map<number, string>();
  if (!last) return out;
  const lastKeys = new Set(last.peers.map((p) => p.publicKey));
  let byNames: Map<string, string> | null = null;
  for (let i = 0; i < plan.peers.length; i++) {
    const p = plan.peers[i]!;
    if (p.kind !== 'segment' || lastKeys.has(p.publicKey)) continue;
    byNames ??= new Map(last.peers.filter((q) => q.kind === 'segment').map((q) => [q.names.join('\n'), q.publicKey]));
    const before = byNames.get(p.names.join('\n'));
    if (before !== undefined) out.set(i, before);
  }
  return out;
}

/**
 * A segment whose key changed gets, under its new key, the endpoint WireGuard learned for its old
 * key while that session was live (`device`: a read taken before the old peer is removed). Behind
 * NAT the planned endpoint is the node's own (private) one, and discovered endpoints are published
 * by key, so none is known yet for the new key: this side could not start the new session, and the
 * traffic waited for the node's next handshake attempt, up to 5 s. The node's address and port stay
 * what they were; only its key changed.
 */
export function carryRekeyedEndpoints(
  plan: Plan,
  rekeyed: ReadonlyMap<number, string>,
  device: WireGuardState | null,
  nowSeconds: number,
): Plan {
  if (rekeyed.size === 0 || !device) return plan;
  let changed: Plan['peers'] | null = null;
  for (const [i, oldKey] of rekeyed) {
    const learned = device.peers.find((d) => d.publicKey === oldKey);
    if (!learned?.endpoint || learned.latestHandshake === 0) continue;
    if (nowSeconds - learned.latestHandshake >= liveHandshakeSeconds) continue;
    changed ??= [...plan.peers];
    changed[i] = { ...plan.peers[i]!, endpoint: learned.endpoint };
  }
  return changed ? { ...plan, peers: changed } : plan;
}
