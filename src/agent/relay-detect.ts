import { relayedPairs } from '../mesh/relays.js';
import { Annotation } from '../model/annotations.js';
import { parseUnreachable } from '../model/relay-annotations.js';
import type { Topology } from '../mesh/topology.js';

/**
 * WireGuard's own timers (the whitepaper's REKEY_TIMEOUT, 5 s, and KEEPALIVE_TIMEOUT, 10 s): a
 * peer that answers sends a handshake response within REKEY_TIMEOUT of an initiation, and a
 * keepalive within KEEPALIVE_TIMEOUT of data it received. A handshake this recent proves that the
 * peer's UDP reaches this node; without one, unanswered probes (which make WireGuard initiate)
 * mean the direct path is down.
 */
export const directPathSeconds = 5 + 10;

/** Whether a peer's latest handshake (Unix seconds, 0: never) proves the direct path at `now`. */
export function handshakeProvesPath(latestHandshake: number, now: number): boolean {
  return latestHandshake !== 0 && now - latestHandshake <= directPathSeconds;
}

/**
 * The peers whose pair with this node goes through a relay, and the address that tests the direct
 * path: their WireGuard IP, which the direct peer entry keeps (mesh/relay-plan.ts). Their pods'
 * address would take the relay and say nothing of the direct path, so the pair would flap.
 */
export function directAddresses(t: Topology): Map<string, string> {
  const out = new Map<string, string>();
  const self = t.local.node.name;
  if (!t.local.leader) return out;
  const pairs = relayedPairs(t, self);
  if (pairs.length === 0) return out;
  // By leader name, once: a relay's pairs are thousands at 5 % of a big mesh (docs/performance.md#relays).
  const byLeader = new Map(t.segments.map((s) => [s.leader.name, s]));
  for (const p of pairs) {
    // A spoke's pairs have no direct entry: their pods' address tests the path through the hub.
    if (p.via === null || p.via === self || p.spoke) continue;
    const other = p.a === self ? p.b : p.a;
    const s = byLeader.get(other);
    const ip = s?.wireGuardIPs[0];
    if (ip) out.set(other, ip.text);
  }
  return out;
}

/** The peers a Node's annotations list as unreachable now (none when the value is bad: it is republished). */
export function publishedUnreachable(annotations: Readonly<Record<string, string>>): string[] {
  const v = annotations[Annotation.unreachable];
  const names = v ? parseUnreachable(v, 'the local Node') : [];
  return Array.isArray(names) ? names : [];
}
