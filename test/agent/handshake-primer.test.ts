/**
 * The addresses a rotating node sends one datagram to so that WireGuard starts its handshakes
 * (docs/key-rotation.md#who-initiates): one per peer, inside that peer's allowed IPs.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { handshakeAddresses } from '../../src/agent/handshake-primer.js';
import type { Plan } from '../../src/mesh/types.js';

const peer = (allowedIPs: string[]) => ({ allowedIPs }) as unknown as Plan['peers'][number];

describe('handshakeAddresses', () => {
  test("a peer's single-address allowed IP (its WireGuard IP) first, else its first allowed IP's first address", () => {
    const plan = {
      peers: [
        peer(['10.42.3.0/24', '10.4.0.3/32', '192.168.2.11/32']),
        peer(['10.42.4.0/24']),
        peer(['fd00::/64', 'fd00:4::5/128']),
        peer([]),
      ],
    } as unknown as Plan;
    assert.deepEqual(handshakeAddresses(plan), ['10.4.0.3', '10.42.4.0', 'fd00:4::5']);
  });
});
