import type { WireGuardState } from '../dataplane/types.js';
import type { Plan } from '../mesh/types.js';

/** A handshake younger than this (WireGuard rejects sessions after 180 s) means the session is live. */
export const liveHandshakeSeconds = 180;

/**
 * Leaves the endpoint of a roaming peer (one behind NAT that keeps the tunnel alive itself) to
 * WireGuard while its session is live: the endpoint it learned from the peer's packets is the
 * one that works. Writing the announced (private) or a stale discovered endpoint over it cut the
 * tunnel until the peer's next keepalive, and the next read published that endpoint as
 * "discovered", so nodes kept flipping between the two.
 */
export function keepRoamingEndpoints(
  plan: Plan,
  device: WireGuardState | null,
  roaming: ReadonlySet<string>,
  nowSeconds: number,
): Plan {
  if (!device || roaming.size === 0) return plan;
  const live = new Set(
    device.peers
      .filter(
        (p) =>
          roaming.has(p.publicKey) &&
          p.endpoint &&
          p.latestHandshake > 0 &&
          nowSeconds - p.latestHandshake < liveHandshakeSeconds,
      )
      .map((p) => p.publicKey),
  );
  if (live.size === 0) return plan;
  return { ...plan, peers: plan.peers.map((p) => (live.has(p.publicKey) ? { ...p, endpoint: null } : p)) };
}
