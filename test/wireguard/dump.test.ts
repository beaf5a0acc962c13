import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DumpParseError, parseDump, presharedKeyDigest } from '../../src/wireguard/dump.js';

// Shaped like real output of wireguard-tools 1.0.20210914 against wireguard-go (tabs, trailing newline).
const priv = 'CATGIMzMgyRcGSm6SX4TroygBOVLeo242lh6ZRzMNVI=';
const pub = '5B3fnUfIoBgW0MUZHWWSRR5SdizcLLgVSIfCq+rlfFc=';
const peerA = 'LtR4C5OPEMjvGcUKSZ9WdHLTSbHT4SrQ8SL/TqHmGX8=';
const peerB = 'cC+Ynf7r/GAHf5CxyUbilug2H0e1onLqQgb6Irejlzo=';
const peerC = 'Fuu9PDSBMCi2/4tvstS/WHl39hD+kEjx3At0XofC0WM=';
const psk = 'Fj0/IPYMHB6oqDU0767kiZJJ/RclNuVAT20x9uSAQ88=';

const sample = [
  [priv, pub, '51820', '0x1234'],
  [peerB, '(none)', '1.2.3.4:51820', '10.1.0.0/16', '0', '0', '0', 'off'],
  [peerA, psk, '[fd00::1]:51820', '10.0.0.0/24,fd00::/64', '1764670362', '92', '180', '25'],
  [peerC, '(none)', '(none)', '(none)', '0', '0', '148', 'off'],
]
  .map((cols) => cols.join('\t'))
  .join('\n')
  .concat('\n');

test('parses the interface line without keeping the private key', () => {
  const { state } = parseDump(sample);
  assert.equal(state.publicKey, pub);
  assert.equal(state.listenPort, 51820);
  assert.equal(state.fwmark, 0x1234);
  assert.ok(!JSON.stringify(state).includes(priv), 'the private key must not be in the state');
});

test('parses peers: endpoints (IPv4, IPv6, none), allowed IPs, keepalive, handshake and transfer', () => {
  const { state } = parseDump(sample);
  assert.deepEqual(
    state.peers.map((p) => p.publicKey),
    [peerC, peerA, peerB].sort(),
    'peers are ordered by public key',
  );
  const byKey = new Map(state.peers.map((p) => [p.publicKey, p]));
  assert.deepEqual(byKey.get(peerA), {
    publicKey: peerA,
    endpoint: '[fd00::1]:51820',
    allowedIPs: ['10.0.0.0/24', 'fd00::/64'],
    persistentKeepalive: 25,
    hasPresharedKey: true,
    latestHandshake: 1764670362,
    rxBytes: 92,
    txBytes: 180,
  });
  assert.deepEqual(byKey.get(peerB), {
    publicKey: peerB,
    endpoint: '1.2.3.4:51820',
    allowedIPs: ['10.1.0.0/16'],
    persistentKeepalive: 0,
    hasPresharedKey: false,
    latestHandshake: 0,
    rxBytes: 0,
    txBytes: 0,
  });
  assert.equal(byKey.get(peerC)!.endpoint, null);
  assert.deepEqual(byKey.get(peerC)!.allowedIPs, []);
  assert.equal(byKey.get(peerC)!.txBytes, 148);
});

test('preshared keys are kept only as digests', () => {
  const { state, presharedKeyDigests } = parseDump(sample);
  assert.deepEqual([...presharedKeyDigests.keys()], [peerA]);
  assert.equal(presharedKeyDigests.get(peerA), presharedKeyDigest(psk));
  assert.notEqual(presharedKeyDigest(psk), presharedKeyDigest(priv));
  assert.ok(!JSON.stringify({ state, d: [...presharedKeyDigests] }).includes(psk));
});

test('a fresh device: no keys, fwmark off, no peers', () => {
  const { state } = parseDump('(none)\t(none)\t42215\toff\n');
  assert.deepEqual(state, { publicKey: null, listenPort: 42215, fwmark: 0, peers: [] });
});

test('a scoped IPv6 link-local endpoint is kept as WireGuard prints it', () => {
  const text = `${priv}\t${pub}\t51820\toff\n${peerA}\t(none)\t[fe80::1%eth0]:51820\t10.4.0.1/32\t0\t0\t0\toff\n`;
  assert.equal(parseDump(text).state.peers[0]!.endpoint, '[fe80::1%eth0]:51820');
});

test('errors name line and field, and never quote a secret column', () => {
  assert.throws(() => parseDump(''), DumpParseError);
  assert.throws(
    () => parseDump(`${priv}\t${pub}\tx\toff\n`),
    /line 1: field listen-port: not a non-negative integer: "x"/,
  );
  assert.throws(() => parseDump(`${priv}\t${pub}\t1\tmark\n`), /line 1: field fwmark/);
  const badIface = `${priv}X\t${pub}\t1\toff\n`;
  assert.throws(
    () => parseDump(badIface),
    (e: Error) => /field private-key/.test(e.message) && !e.message.includes(priv),
  );
  const badPsk = `${priv}\t${pub}\t1\toff\n${peerA}\t${psk}!\t(none)\t(none)\t0\t0\t0\toff\n`;
  assert.throws(
    () => parseDump(badPsk),
    (e: Error) => /line 2: field preshared-key/.test(e.message) && !e.message.includes(psk),
  );
  // `wg show all dump` has an extra interface-name column: refused, not misread.
  const all = `kilo0\t${priv}\t${pub}\t1\toff\n`;
  assert.throws(
    () => parseDump(all),
    (e: Error) => /expected 4/.test(e.message) && !e.message.includes(priv),
  );
  assert.throws(
    () => parseDump(`${priv}\t${pub}\t1\toff\n${peerA}\t(none)\t(none)\n`),
    /line 2: field peer: expected 8/,
  );
  assert.throws(
    () => parseDump(`${priv}\t${pub}\t1\toff\nnot-a-key\t(none)\t(none)\t(none)\t0\t0\t0\toff\n`),
    /line 2: field public-key/,
  );
  assert.throws(
    () => parseDump(`${priv}\t${pub}\t1\toff\n${peerA}\t(none)\t(none)\t(none)\t0\t0\t0\tsoon\n`),
    /persistent-keepalive/,
  );
});
