import assert from 'node:assert/strict';
import { test } from 'node:test';
import { keepRoamingEndpoints } from '../../src/agent/roaming.js';
import type { WireGuardPeerState, WireGuardState } from '../../src/dataplane/types.js';
import type { Plan, PlanPeer } from '../../src/mesh/types.js';
import { peerState } from '../helpers/wireguard-state.js';

const now = 1_000_000;
const planPeer = (publicKey: string, endpoint: string): PlanPeer => ({
  kind: 'segment',
  names: [publicKey],
  publicKey,
  endpoint,
  allowedIPs: ['10.4.0.1/32'],
  persistentKeepalive: 0,
  presharedKey: null,
});
const plan = {
  peers: [planPeer('nat', '192.168.2.11:51820'), planPeer('public', '198.18.1.11:51820')],
} as unknown as Plan;
const device = (peers: WireGuardPeerState[]): WireGuardState => ({
  publicKey: 'me',
  listenPort: 51820,
  fwmark: 0,
  peers,
});

test('a roaming peer with a live session keeps the endpoint WireGuard learned (null endpoint in the plan)', () => {
  const out = keepRoamingEndpoints(
    plan,
    device([peerState('nat', '198.18.2.1:40000', now - 10), peerState('public', '198.18.1.11:51820', now - 10)]),
    new Set(['nat']),
    now,
  );
  assert.deepEqual(
    out.peers.map((p) => [p.publicKey, p.endpoint]),
    [
      ['nat', null],
      ['public', '198.18.1.11:51820'],
    ],
  );
});

test('without a handshake, or with a dead session, the planned endpoint is written', () => {
  const roaming = new Set(['nat']);
  for (const handshake of [0, now - 180]) {
    const out = keepRoamingEndpoints(plan, device([peerState('nat', '198.18.2.1:40000', handshake)]), roaming, now);
    assert.equal(out.peers[0]!.endpoint, '192.168.2.11:51820', `handshake ${handshake}`);
  }
  assert.equal(keepRoamingEndpoints(plan, null, roaming, now), plan);
});

test('a peer that does not roam always gets its planned endpoint', () => {
  const out = keepRoamingEndpoints(plan, device([peerState('public', '198.18.9.9:1', now - 1)]), new Set(['nat']), now);
  assert.equal(out.peers[1]!.endpoint, '198.18.1.11:51820');
});
