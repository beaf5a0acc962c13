import { createSocket } from 'node:dgram';
import type { Topology } from '../mesh/topology.js';
import type { Plan } from '../mesh/types.js';
import { Cidr } from '../net/cidr.js';

/**
 * One address per WireGuard peer of the plan that will initiate the new key's session itself, in
 * that peer's tunnel: its first single-address allowed IP (a segment's WireGuard IP, which a
 * relayed pair's direct entry keeps too), else the first address of its first allowed IP. A node
 * behind NAT leaves out the peers that cannot reach it under its new key: nodes of Kilo's agent
 * (they do not carry its learned endpoint over, docs/key-rotation.md#in-a-mixed-cluster) and Peers;
 * those go on waiting for its own initiation, which is the one that works.
 */
export function handshakeAddresses(plan: Plan, t: Topology): string[] {
  const behindNAT = t.local.node.persistentKeepalive > 0;
  const out: string[] = [];
  for (const p of plan.peers) {
    if (behindNAT && !reachesUs(p, t)) continue;
    const cidrs = p.allowedIPs.map((a) => Cidr.tryParse(a)).filter((c): c is Cidr => c !== null);
    const host = cidrs.find((c) => c.prefix === (c.family === 4 ? 32 : 128)) ?? cidrs[0];
    if (host) out.push(host.ip.text);
  }
  return out;
}

/** A segment whose nodes all run kilo-ts (they announce mesh flags: a relay role) carries the endpoint. */
function reachesUs(p: Plan['peers'][number], t: Topology): boolean {
  if (p.kind !== 'segment') return false;
  const names = new Set(p.names);
  const s = t.segments.find((x) => x.nodes.some((n) => names.has(n.name)));
  return !!s && s.nodes.every((n) => n.relay !== undefined);
}

/** The discard port: nothing listens there, and what arrives is dropped. */
const discardPort = 9;

/**
 * Makes WireGuard start a handshake with every peer now: one empty datagram to each address
 * (handshakeAddresses) through the tunnel. Called right after a key switch, before the key is
 * published: no peer knows the key yet, so every one of these handshakes fails, and WireGuard
 * starts no other for REKEY_TIMEOUT (5 s). Within that time only the peers, as they learn the key,
 * initiate, so the two sides never cross (docs/key-rotation.md#who-initiates). Best effort.
 */
export async function primeHandshakes(addresses: readonly string[]): Promise<void> {
  await Promise.all([
    sendAll(
      'udp4',
      addresses.filter((a) => !a.includes(':')),
    ),
    sendAll(
      'udp6',
      addresses.filter((a) => a.includes(':')),
    ),
  ]);
}

function sendAll(type: 'udp4' | 'udp6', addresses: readonly string[]): Promise<void> {
  if (addresses.length === 0) return Promise.resolve();
  const socket = createSocket(type);
  socket.on('error', () => {});
  const sent = addresses.map(
    (a) => new Promise<void>((resolve) => socket.send(Buffer.alloc(0), discardPort, a, () => resolve())),
  );
  return Promise.all(sent).then(() => new Promise<void>((resolve) => socket.close(() => resolve())));
}
