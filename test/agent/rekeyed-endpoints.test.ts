/** carryRekeyedEndpoints: a segment that changed its key keeps the endpoint WireGuard learned under the old one. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { carryRekeyedEndpoints, RekeyedEndpoints, rekeyedSegments } from '../../src/agent/rekeyed-endpoints.js';
import type { WireGuardPeerState, WireGuardState } from '../../src/dataplane/types.js';
import type { Plan, PlanPeer } from '../../src/mesh/types.js';
import { peerState as seen } from '../helpers/wireguard-state.js';

const now = 1_000_000;
const segment = (name: string, publicKey: string, endpoint: string | null): PlanPeer => ({
  kind: 'segment',
  names: [name],
  publicKey,
  endpoint,
  allowedIPs: ['10.4.0.1/32'],
  persistentKeepalive: 0,
  presharedKey: null,
});
const planOf = (...peers: PlanPeer[]) => ({ peers }) as unknown as Plan;
const device = (...peers: WireGuardPeerState[]): WireGuardState => ({
  publicKey: 'me',
  listenPort: 51820,
  fwmark: 0,
  peers,
});

const last = planOf(segment('nat', 'old', '192.168.2.11:51820'), segment('public', 'pub', '198.18.1.11:51820'));
const next = planOf(segment('nat', 'new', '192.168.2.11:51820'), segment('public', 'pub', '198.18.1.11:51820'));

test("the node's new key gets the endpoint its old key's live session came from; the others are untouched", () => {
  assert.deepEqual([...rekeyedSegments(next, last)], [[0, 'old']]);
  const out = carryRekeyedEndpoints(
    next,
    rekeyedSegments(next, last),
    device(seen('old', '198.18.2.1:40000', now - 10)),
    now,
  );
  assert.equal(out.peers[0]!.endpoint, '198.18.2.1:40000');
  assert.equal(out.peers[0]!.publicKey, 'new');
  assert.equal(out.peers[1], next.peers[1]);
});

test('nothing to carry: no key changed, no session, a stale session, another segment, no last plan', () => {
  const live = device(seen('old', '198.18.2.1:40000', now - 10));
  const carry = (plan: Plan, before: Plan | null, d: WireGuardState) =>
    carryRekeyedEndpoints(plan, rekeyedSegments(plan, before), d, now);
  assert.equal(carry(last, last, live), last, 'no key changed');
  assert.equal(carry(next, last, device(seen('old', '198.18.2.1:40000', 0))), next, 'never');
  assert.equal(carry(next, last, device(seen('old', '198.18.2.1:40000', now - 200))), next, 'stale');
  const renamed = planOf(segment('other', 'new', null));
  assert.equal(rekeyedSegments(renamed, last).size, 0, 'a new segment is not a rekeyed one');
  assert.equal(carry(renamed, last, live), renamed);
  assert.equal(carry(next, null, live), next);
});

test('RekeyedEndpoints: the carried endpoint is written by later passes until a read sees the new key live', async () => {
  const quiet = { debug() {}, info() {}, warn() {}, error() {} };
  const r = new RekeyedEndpoints(quiet);
  const oldLive = device(seen('old', '198.18.2.1:40000', now - 10));
  let reads = 0;
  const readNow = () => (reads++, Promise.resolve(oldLive));
  const first = await r.apply(next, last, null, now, readNow);
  assert.equal(first.peers[0]!.endpoint, '198.18.2.1:40000');
  assert.equal(reads, 1, 'a pass that made no read reads the device once, for the changed key');
  // A later pass that trusts the last write: no key changes, no read, the carried endpoint stays.
  assert.equal((await r.apply(next, next, null, now + 1, readNow)).peers[0]!.endpoint, '198.18.2.1:40000');
  assert.equal(reads, 1);
  // A full read where the new key has no session yet: still carried.
  const notYet = device(seen('new', null, 0));
  assert.equal((await r.apply(next, next, notYet, now + 2, readNow)).peers[0]!.endpoint, '198.18.2.1:40000');
  // A full read with the new key's session live: the roaming rule takes over, the plan is left as it is.
  const live = device(seen('new', '198.18.2.1:40000', now + 2));
  assert.equal(await r.apply(next, next, live, now + 3, readNow), next);
  assert.equal(await r.apply(next, next, null, now + 4, readNow), next, 'forgotten');
});
