/**
 * The agent's roaming peers are found once per read of the device, by the keys of the topology the
 * read was taken under, and again when the pass's own topology names others (agent.ts roamingSeen).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NOW, peer, wgKey } from '../helpers/cluster.js';
import { eventually, settled, startHarness } from './agent-harness.js';

test('a peer that starts to roam in the pass that reads its live session keeps the endpoint WireGuard learned', async (t) => {
  // Without a routing monitor every pass reads the device.
  const h = await startHarness(t);
  h.api.addPeer(peer('phone', { allowedIPs: ['10.5.0.7/32'], endpoint: '192.0.2.7:51820' }));
  await eventually('phone is configured', async () =>
    (await h.device.read()).peers.some((p) => p.publicKey === wgKey('phone')),
  );
  await settled(h);
  h.device.handshake(wgKey('phone'), NOW);
  h.device.learnEndpoint(wgKey('phone'), '198.18.2.1:40000');
  // Now behind a NAT, keeping its tunnel alive: the pass that plans this reads the session above.
  const passes = h.agent.status.reconciles;
  h.api.updatePeer(peer('phone', { allowedIPs: ['10.5.0.7/32'], endpoint: '192.0.2.7:51820', keepalive: 25 }));
  await eventually(
    'a pass plans it roaming',
    () =>
      h.agent.status.topology!.peers.some((p) => p.publicKey === wgKey('phone') && p.persistentKeepalive === 25) &&
      h.agent.status.reconciles > passes,
  );
  await settled(h);
  const phone = (await h.device.read()).peers.find((p) => p.publicKey === wgKey('phone'));
  assert.equal(phone?.endpoint, '198.18.2.1:40000', 'the announced endpoint was written over the live session');
});
