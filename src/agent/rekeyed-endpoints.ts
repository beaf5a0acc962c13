import type { Logger } from '../backend/source.js';
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
  // The reused plan (a pass with only heartbeats since the last) is the last one: no key moved, and
  // 19,000 keys are not hashed into a set to find that out.
  if (!last || last === plan) return out;
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

/**
 * The agent's side of carryRekeyedEndpoints: an endpoint carried to a new key is written again by
 * every pass until a read of the device sees the new key's own session live (then the roaming rule
 * keeps what WireGuard learned, and the endpoint is published as discovered under the new key).
 * Passes that trust the last write hold an older read, in which the new key has no session: they
 * would write the planned (private) endpoint over the working one.
 */
export class RekeyedEndpoints {
  /** New key → the endpoint carried to it. */
  private readonly carried = new Map<string, string>();

  constructor(private readonly log: Logger) {}

  /**
   * `read`: the pass's own read of the device, if it made one; `readNow` reads it when a key changed
   * and the pass made none (the last full read may predate the old key's session).
   */
  async apply(
    plan: Plan,
    last: Plan | null,
    read: WireGuardState | null,
    nowSeconds: number,
    readNow: () => Promise<WireGuardState | null>,
  ): Promise<Plan> {
    const rekeyed = rekeyedSegments(plan, last);
    if (rekeyed.size > 0) {
      const out = carryRekeyedEndpoints(plan, rekeyed, read ?? (await readNow()), nowSeconds);
      for (const i of rekeyed.keys()) {
        const p = out.peers[i]!;
        if (p.endpoint === plan.peers[i]!.endpoint || p.endpoint === null) continue;
        this.carried.set(p.publicKey, p.endpoint);
        this.log.info(
          { peer: p.names, publicKey: p.publicKey, endpoint: p.endpoint },
          'a peer changed its key: keeping the endpoint its old key was reached at',
        );
      }
    }
    if (this.carried.size === 0) return plan;
    const keys = new Set(plan.peers.map((p) => p.publicKey));
    for (const k of [...this.carried.keys()])
      if (!keys.has(k) || (read && isLive(read, k, nowSeconds))) this.carried.delete(k);
    if (this.carried.size === 0) return plan;
    return {
      ...plan,
      peers: plan.peers.map((p) => {
        const endpoint = this.carried.get(p.publicKey);
        return endpoint === undefined ? p : { ...p, endpoint };
      }),
    };
  }
}

function isLive(device: WireGuardState, publicKey: string, nowSeconds: number): boolean {
  const p = device.peers.find((d) => d.publicKey === publicKey);
  return !!p && p.latestHandshake > 0 && nowSeconds - p.latestHandshake < liveHandshakeSeconds;
}
