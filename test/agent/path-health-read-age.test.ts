/**
 * A failing WireGuard pair's reason carries the peer's handshake as the device was last read, and
 * the device is read at full passes only: a reason from an old read dates it, so that "no handshake
 * yet" from a read half a minute old is not taken for the state now.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PathHealth } from '../../src/agent/path-health.js';
import { Prober } from '../../src/agent/health-prober.js';
import { newPeerState, type WireGuardState } from '../../src/wireguard/state.js';
import { NOW, node, topologyFor, wgKey } from '../helpers/cluster.js';

const nodes = [
  node('loc1-n1', {
    location: 'loc1',
    internalIP: '192.168.1.11/24',
    endpoint: '198.18.1.11:51820',
    podCIDR: '10.42.1.0/24',
  }),
  node('loc2-n1', {
    location: 'loc2',
    internalIP: '192.168.2.11/24',
    endpoint: '198.18.2.11:51820',
    podCIDR: '10.42.3.0/24',
  }),
];

test('a failing pair’s reason dates the device read it took the handshake from when that read is old', async () => {
  const clock = { s: NOW };
  let answers = false;
  const health = new PathHealth({
    prober: new Prober(() => Promise.resolve(answers), { freshMs: 0 }),
    mesh: { encapsulate: 'never', local: true },
    log: { warn: () => {}, info: () => {} },
    clock: () => clock.s * 1000,
  });
  const fail = async () => {
    answers = true;
    await health.round();
    answers = false;
    for (let i = 0; i < 3; i++) await health.round();
    return health.degraded() ?? '';
  };
  const t = topologyFor(nodes, 'loc2-n1', { granularity: 'cross' });
  // Not read yet: the reason does not claim there was no handshake.
  health.planned(t, null);
  assert.match(await fail(), /\(3 probes in a row; its handshake not read yet\)/);

  const device: WireGuardState = {
    publicKey: null,
    listenPort: 51820,
    fwmark: 0,
    peers: [newPeerState(wgKey('loc1-n1'))],
  };
  health.planned(t, device);
  assert.match(await fail(), /\(3 probes in a row; no handshake yet\)/, 'a fresh read is the state now');
  // Passes that trust the last write read nothing: 25 s on, the reason says how old its facts are.
  clock.s += 25;
  assert.match(await fail(), /\(3 probes in a row; no handshake yet as of a read 25 s ago\)/);
  // The next full pass's read.
  health.planned(t, { ...device, peers: [{ ...newPeerState(wgKey('loc1-n1')), latestHandshake: clock.s - 2 }] });
  assert.match(health.degraded() ?? '', /\(3 probes in a row; last handshake 2 s ago\)/);
});
