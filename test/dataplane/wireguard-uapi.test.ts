import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseUapiGet, uapiCanSet, uapiSetRequest } from '../../src/dataplane/wireguard/uapi.js';
import type { WireGuardDiff } from '../../src/dataplane/wireguard/diff.js';
import { presharedKeyDigest } from '../../src/wireguard/dump.js';
import { generatePrivateKey, publicKeyOf } from '../../src/wireguard/keys.js';

const hex = (b64: string) => Buffer.from(b64, 'base64').toString('hex');
const [a, b, c] = [
  publicKeyOf(generatePrivateKey()),
  publicKeyOf(generatePrivateKey()),
  publicKeyOf(generatePrivateKey()),
];

test('set: interface first, then each peer: remove, update only, add; allowed IPs replaced, a removed preshared key is zeros', () => {
  const privateKey = generatePrivateKey();
  const psk = generatePrivateKey();
  const diff: WireGuardDiff = {
    interface: { privateKey, listenPort: 51821, fwmark: 0x453 },
    peers: [
      { kind: 'remove', publicKey: a },
      {
        kind: 'update',
        publicKey: b,
        set: { endpoint: '[2001:db8::2]:51820', persistentKeepalive: 0, presharedKey: null },
      },
      {
        kind: 'add',
        publicKey: c,
        set: { endpoint: '192.0.2.3:51820', presharedKey: psk, allowedIPs: ['10.4.0.3/32', '10.42.3.0/24'] },
      },
    ],
  };
  assert.equal(
    uapiSetRequest(diff),
    [
      'set=1',
      `private_key=${hex(privateKey)}`,
      'listen_port=51821',
      `fwmark=${0x453}`,
      `public_key=${hex(a)}`,
      'remove=true',
      `public_key=${hex(b)}`,
      'update_only=true',
      'endpoint=[2001:db8::2]:51820',
      'persistent_keepalive_interval=0',
      `preshared_key=${'0'.repeat(64)}`,
      `public_key=${hex(c)}`,
      'endpoint=192.0.2.3:51820',
      `preshared_key=${hex(psk)}`,
      'replace_allowed_ips=true',
      'allowed_ip=10.4.0.3/32',
      'allowed_ip=10.42.3.0/24',
      '',
      '',
    ].join('\n'),
  );
});

test('the socket takes addresses only: a DNS endpoint goes through wg, which resolves it', () => {
  const withEndpoint = (endpoint: string): WireGuardDiff => ({
    interface: {},
    peers: [{ kind: 'add', publicKey: a, set: { endpoint } }],
  });
  assert.equal(uapiCanSet(withEndpoint('192.0.2.1:51820')), true);
  assert.equal(uapiCanSet(withEndpoint('[fd00::1]:51820')), true);
  assert.equal(uapiCanSet(withEndpoint('node-b.example:51820')), false);
  assert.equal(uapiCanSet({ interface: {}, peers: [{ kind: 'remove', publicKey: a }] }), true);
});

test('get: the state wg show dump gives; the private key becomes its public key, preshared keys digests; peers by key', () => {
  const privateKey = generatePrivateKey();
  const psk = generatePrivateKey();
  const [first, second] = [b, c].sort();
  const text = [
    `private_key=${hex(privateKey)}`,
    'listen_port=51820',
    'fwmark=1107',
    `public_key=${hex(second!)}`,
    `preshared_key=${'0'.repeat(64)}`,
    'protocol_version=1',
    'last_handshake_time_sec=0',
    'last_handshake_time_nsec=0',
    'tx_bytes=0',
    'rx_bytes=0',
    'persistent_keepalive_interval=0',
    'allowed_ip=10.4.0.3/32',
    `public_key=${hex(first!)}`,
    `preshared_key=${hex(psk)}`,
    'protocol_version=1',
    'endpoint=192.0.2.2:51820',
    'last_handshake_time_sec=1764662400',
    'last_handshake_time_nsec=5',
    'tx_bytes=100',
    'rx_bytes=200',
    'persistent_keepalive_interval=25',
    'allowed_ip=10.4.0.2/32',
    'allowed_ip=10.42.2.0/24',
    '',
  ].join('\n');
  const { state, presharedKeyDigests } = parseUapiGet(text);
  assert.deepEqual(state, {
    publicKey: publicKeyOf(privateKey),
    listenPort: 51820,
    fwmark: 1107,
    peers: [
      {
        publicKey: first,
        endpoint: '192.0.2.2:51820',
        allowedIPs: ['10.4.0.2/32', '10.42.2.0/24'],
        persistentKeepalive: 25,
        hasPresharedKey: true,
        latestHandshake: 1764662400,
        rxBytes: 200,
        txBytes: 100,
      },
      {
        publicKey: second,
        endpoint: null,
        allowedIPs: ['10.4.0.3/32'],
        persistentKeepalive: 0,
        hasPresharedKey: false,
        latestHandshake: 0,
        rxBytes: 0,
        txBytes: 0,
      },
    ],
  });
  assert.deepEqual([...presharedKeyDigests], [[first, presharedKeyDigest(psk)]]);
  assert.ok(!JSON.stringify(state).includes(privateKey), 'the private key is not kept');
});

test('get: every public key of a large device is its base64, in one conversion or, for a malformed one, each alone', () => {
  const keys = Array.from({ length: 300 }, () => generatePrivateKey());
  const answer = (hexKeys: string[]) => hexKeys.map((k) => `public_key=${k}\nallowed_ip=10.4.0.1/32\n`).join('');
  const read = (hexKeys: string[]) => parseUapiGet(answer(hexKeys)).state.peers.map((p) => p.publicKey);
  const old = (k: string) => Buffer.from(k, 'hex').toString('base64');
  assert.deepEqual(read(keys.map(hex)), keys.sort());
  const odd = keys.map(hex);
  odd[150] = odd[150]!.slice(0, 62);
  assert.deepEqual(read(odd), odd.map(old).sort());
});

test('get: lines are read as the device writes them, whatever surrounds them: unknown keys, no "=", odd numbers, no last newline', () => {
  const [first, second] = [a, b].sort();
  const text = [
    'listen_port=0051820',
    'no equals sign here',
    'fwmark=',
    'public_key_extra=ff',
    `public_key=${hex(first!)}`,
    'protocol_version=1',
    'last_handshake_time_nsec=5',
    'endpoint=192.0.2.2:51820',
    'rx_bytes=123456789012345678',
    'tx_bytes=12x',
    'persistent_keepalive_interval=',
    '',
    'allowed_ip=10.4.0.2/32',
    'allowed_ips=10.9.9.9/32',
    `public_key=${hex(second!)}`,
    'last_handshake_time_sec=1764662400',
    'allowed_ip=10.4.0.3/32',
  ].join('\n');
  const { state } = parseUapiGet(text);
  assert.equal(state.listenPort, 51820);
  assert.equal(state.fwmark, 0);
  assert.deepEqual(state.peers, [
    {
      publicKey: first,
      endpoint: '192.0.2.2:51820',
      allowedIPs: ['10.4.0.2/32'],
      persistentKeepalive: 0,
      hasPresharedKey: false,
      latestHandshake: 0,
      rxBytes: 123456789012345678,
      txBytes: NaN,
    },
    {
      publicKey: second,
      endpoint: null,
      allowedIPs: ['10.4.0.3/32'],
      persistentKeepalive: 0,
      hasPresharedKey: false,
      latestHandshake: 1764662400,
      rxBytes: 0,
      txBytes: 0,
    },
  ]);
});
