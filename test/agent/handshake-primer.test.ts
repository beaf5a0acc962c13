/**
 * The addresses a rotating node sends one datagram to so that WireGuard starts its handshakes
 * (docs/key-rotation.md#who-initiates): one per peer, inside that peer's allowed IPs; behind NAT,
 * only the peers that reach the node under its new key by themselves (kilo-ts nodes).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { handshakeAddresses } from '../../src/agent/handshake-primer.js';
import type { Topology } from '../../src/mesh/topology.js';
import type { Plan } from '../../src/mesh/types.js';

const plan = {
  peers: [
    { kind: 'segment', names: ['b'], allowedIPs: ['10.42.3.0/24', '10.4.0.3/32', '192.168.2.11/32'] },
    { kind: 'segment', names: ['c'], allowedIPs: ['10.42.4.0/24'] },
    { kind: 'segment', names: ['kilo'], allowedIPs: ['fd00::/64', 'fd00:4::5/128'] },
    { kind: 'peer', names: ['laptop'], allowedIPs: ['10.5.0.1/32'] },
    { kind: 'segment', names: ['empty'], allowedIPs: [] },
  ],
} as unknown as Plan;

/** Nodes b, c and empty run kilo-ts (a relay role); `kilo` runs Kilo's agent (none). */
function topology(persistentKeepalive: number): Topology {
  const node = (name: string, kiloTs: boolean) => ({ name, ...(kiloTs ? { relay: 'allow' } : {}) });
  return {
    local: { node: { name: 'a', persistentKeepalive } },
    segments: [[node('b', true)], [node('c', true)], [node('kilo', false)], [node('empty', true)]].map((nodes) => ({
      nodes,
    })),
  } as unknown as Topology;
}

describe('handshakeAddresses', () => {
  test("a peer's single-address allowed IP (its WireGuard IP) first, else its first allowed IP's first address", () => {
    assert.deepEqual(handshakeAddresses(plan, topology(0)), ['10.4.0.3', '10.42.4.0', 'fd00:4::5', '10.5.0.1']);
  });

  test("behind NAT: only kilo-ts nodes, which carry the node's learned endpoint to its new key", () => {
    assert.deepEqual(handshakeAddresses(plan, topology(5)), ['10.4.0.3', '10.42.4.0']);
  });
});
