import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeWireGuardDevice } from '../../src/dataplane/wireguard/fake.js';
import { generatePrivateKey, publicKeyOf } from '../../src/wireguard/keys.js';
import { wireGuardAheadContract, wireGuardContract, wireGuardDetachContract } from './wireguard-contract.js';

wireGuardContract('fake', async () => {
  const device = new FakeWireGuardDevice('kilo0');
  return { device, cleanup: async () => {} };
});

wireGuardAheadContract('fake', async () => ({ device: new FakeWireGuardDevice('kilo0'), cleanup: async () => {} }));
wireGuardDetachContract('fake', async () => ({ device: new FakeWireGuardDevice('kilo0'), cleanup: async () => {} }));

test('fake: an untouched peer keeps its session; the record of writes never holds a key', async () => {
  const d = new FakeWireGuardDevice();
  await d.ensure();
  const privateKey = generatePrivateKey();
  const psk = generatePrivateKey();
  const talking = {
    kind: 'segment' as const,
    names: ['a'],
    publicKey: publicKeyOf(generatePrivateKey()),
    endpoint: '192.0.2.1:51820',
    allowedIPs: ['10.4.0.1/32'],
    persistentKeepalive: 0,
    presharedKey: psk,
  };
  const other = {
    ...talking,
    names: ['b'],
    publicKey: publicKeyOf(generatePrivateKey()),
    allowedIPs: ['10.4.0.2/32'],
    presharedKey: null,
  };
  await d.configure({ privateKey, listenPort: 51820, peers: [talking] });
  d.handshake(talking.publicKey, 1_700_000_000);
  await d.configure({ privateKey, listenPort: 51820, peers: [talking, other] });
  await d.configure({ privateKey, listenPort: 51820, peers: [talking] });
  const s = (await d.read()).peers.find((p) => p.publicKey === talking.publicKey)!;
  assert.equal(s.latestHandshake, 1_700_000_000);
  const text = JSON.stringify([d.history, d.lastOps]);
  assert.ok(d.history.length > 0);
  assert.ok(!text.includes(privateKey) && !text.includes(psk));
});

test('fake: an allowed IP claimed by a new peer leaves the old one, as in WireGuard', async () => {
  const d = new FakeWireGuardDevice();
  await d.ensure();
  const privateKey = generatePrivateKey();
  const a = {
    kind: 'segment' as const,
    names: ['a'],
    publicKey: publicKeyOf(generatePrivateKey()),
    endpoint: null,
    allowedIPs: ['10.4.0.1/32', '10.42.0.0/24'],
    persistentKeepalive: 0,
    presharedKey: null,
  };
  const b = { ...a, names: ['b'], publicKey: publicKeyOf(generatePrivateKey()), allowedIPs: ['10.42.0.0/24'] };
  await d.configure({ privateKey, listenPort: 51820, peers: [a] });
  // Desired state moves 10.42.0.0/24 from a to b.
  const changes = await d.configure({
    privateKey,
    listenPort: 51820,
    peers: [{ ...a, allowedIPs: ['10.4.0.1/32'] }, b],
  });
  assert.deepEqual(changes, { added: [b.publicKey], removed: [], updated: [a.publicKey] });
  const byKey = new Map((await d.read()).peers.map((p) => [p.publicKey, p.allowedIPs]));
  assert.deepEqual(byKey.get(a.publicKey), ['10.4.0.1/32']);
  assert.deepEqual(byKey.get(b.publicKey), ['10.42.0.0/24']);
});

test('fake: read before ensure and after destroy fails like a missing interface', async () => {
  const d = new FakeWireGuardDevice('kilo9');
  await assert.rejects(d.read(), /kilo9 does not exist/);
  await d.ensure();
  await d.destroy();
  await assert.rejects(d.read(), /kilo9 does not exist/);
});
