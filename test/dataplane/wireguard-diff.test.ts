import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { WireGuardConfig, WireGuardPeerState, WireGuardState } from '../../src/dataplane/types.js';
import {
  describeDiff,
  diffWireGuard,
  isEmptyDiff,
  normalizeAllowedIP,
  peerChangesOf,
  WireGuardConfigError,
  writesOf,
} from '../../src/dataplane/wireguard/diff.js';
import { Cidr } from '../../src/net/cidr.js';
import { wgSetCommands } from '../../src/dataplane/wireguard/wg-set.js';
import type { PlanPeer } from '../../src/mesh/types.js';
import { presharedKeyDigest } from '../../src/wireguard/dump.js';
import { generatePrivateKey, publicKeyOf } from '../../src/wireguard/keys.js';
import { newPeerState } from '../../src/wireguard/state.js';

const privateKey = generatePrivateKey();
const psk = generatePrivateKey();
const [k1, k2, k3, k4] = Array.from({ length: 4 }, () => publicKeyOf(generatePrivateKey())).sort() as [
  string,
  string,
  string,
  string,
];

function have(key: string, over: Partial<WireGuardPeerState> = {}): WireGuardPeerState {
  return { ...newPeerState(key), ...over };
}

function want(key: string, over: Partial<PlanPeer> = {}): PlanPeer {
  return {
    kind: 'segment',
    names: [key.slice(0, 4)],
    publicKey: key,
    endpoint: null,
    allowedIPs: [],
    persistentKeepalive: 0,
    presharedKey: null,
    ...over,
  };
}

function state(peers: WireGuardPeerState[], over: Partial<WireGuardState> = {}): WireGuardState {
  return { publicKey: publicKeyOf(privateKey), listenPort: 51820, fwmark: 0, peers, ...over };
}

function config(peers: PlanPeer[], over: Partial<WireGuardConfig> = {}): WireGuardConfig {
  return { privateKey, listenPort: 51820, peers, ...over };
}

test('an unchanged device needs nothing, whatever the order, host bits or IPv6 spelling', () => {
  const current = state([
    have(k1, {
      endpoint: '[2001:db8::2]:51820',
      allowedIPs: ['10.42.1.0/24', '10.4.0.1/32', 'fd42::/64'],
      persistentKeepalive: 25,
      hasPresharedKey: true,
    }),
    have(k2, { endpoint: '192.0.2.2:51820', allowedIPs: ['10.4.0.2/32'] }),
  ]);
  const desired = config([
    want(k2, { endpoint: '192.0.2.2:51820', allowedIPs: ['10.4.0.2/32'] }),
    want(k1, {
      endpoint: '[2001:0db8:0::0002]:51820',
      allowedIPs: ['fd42::1/64', '10.4.0.1/32', '10.42.1.7/24', '10.4.0.1/32'],
      persistentKeepalive: 25,
      presharedKey: psk,
    }),
  ]);
  const diff = diffWireGuard(current, desired, new Map([[k1, presharedKeyDigest(psk)]]));
  assert.ok(isEmptyDiff(diff), JSON.stringify(describeDiff('kilo0', diff)));
});

test('adds, removes and updates, removes first and adds last, each with only what changed', () => {
  const current = state([
    have(k1, { endpoint: '192.0.2.1:1', allowedIPs: ['10.4.0.1/32'] }),
    have(k2, { allowedIPs: ['10.4.0.2/32'] }),
    have(k4, { allowedIPs: ['10.4.0.4/32'] }),
  ]);
  const desired = config([
    want(k4, { allowedIPs: ['10.4.0.4/32'] }),
    want(k3, {
      endpoint: '192.0.2.3:51820',
      allowedIPs: ['10.4.0.3/32', '10.42.3.0/24'],
      persistentKeepalive: 5,
      presharedKey: psk,
    }),
    want(k1, { endpoint: '192.0.2.1:2', allowedIPs: ['10.4.0.1/32'] }),
  ]);
  const diff = diffWireGuard(current, desired);
  assert.deepEqual(diff.interface, {});
  assert.deepEqual(diff.peers, [
    { kind: 'remove', publicKey: k2 },
    { kind: 'update', publicKey: k1, set: { endpoint: '192.0.2.1:2' } },
    {
      kind: 'add',
      publicKey: k3,
      set: {
        endpoint: '192.0.2.3:51820',
        allowedIPs: ['10.4.0.3/32', '10.42.3.0/24'],
        persistentKeepalive: 5,
        presharedKey: psk,
      },
    },
  ]);
  assert.deepEqual(peerChangesOf(diff), { added: [k3], removed: [k2], updated: [k1] });
});

test('allowed IPs, keepalive and preshared-key presence are compared', () => {
  const current = state([have(k1, { allowedIPs: ['10.4.0.1/32'], persistentKeepalive: 25, hasPresharedKey: true })]);
  const diff = diffWireGuard(current, config([want(k1, { allowedIPs: ['10.4.0.1/32', '10.42.1.0/24'] })]));
  assert.deepEqual(diff.peers, [
    {
      kind: 'update',
      publicKey: k1,
      set: { allowedIPs: ['10.4.0.1/32', '10.42.1.0/24'], persistentKeepalive: 0, presharedKey: null },
    },
  ]);
});

test('a changed preshared key is seen through digests; without them only presence counts', () => {
  const current = state([have(k1, { hasPresharedKey: true })]);
  const desired = config([want(k1, { presharedKey: psk })]);
  const old = new Map([[k1, presharedKeyDigest(generatePrivateKey())]]);
  assert.deepEqual(diffWireGuard(current, desired, old).peers, [
    { kind: 'update', publicKey: k1, set: { presharedKey: psk } },
  ]);
  assert.ok(isEmptyDiff(diffWireGuard(current, desired)));
  assert.ok(isEmptyDiff(diffWireGuard(current, desired, new Map([[k1, presharedKeyDigest(psk)]]))));
});

test('a null desired endpoint never overrides the endpoint WireGuard learned', () => {
  const current = state([have(k1, { endpoint: '198.51.100.7:40123', persistentKeepalive: 25 })]);
  assert.ok(isEmptyDiff(diffWireGuard(current, config([want(k1, { persistentKeepalive: 25 })]))));
  // A known endpoint does: the plan chose it (e.g. from discovered endpoints).
  const diff = diffWireGuard(current, config([want(k1, { endpoint: '198.51.100.7:40124', persistentKeepalive: 25 })]));
  assert.deepEqual(diff.peers, [{ kind: 'update', publicKey: k1, set: { endpoint: '198.51.100.7:40124' } }]);
});

test('interface: listen port (0 = any), fwmark, private key by its public key', () => {
  assert.deepEqual(diffWireGuard(state([], { listenPort: 43211 }), config([], { listenPort: 0 })).interface, {});
  assert.deepEqual(diffWireGuard(state([], { listenPort: 43211 }), config([])).interface, { listenPort: 51820 });
  assert.deepEqual(diffWireGuard(state([], { fwmark: 0x1107 }), config([])).interface, { fwmark: 0 });
  assert.deepEqual(diffWireGuard(state([]), config([], { fwmark: 0x1107 })).interface, { fwmark: 0x1107 });
  assert.deepEqual(diffWireGuard(state([], { publicKey: null }), config([])).interface, { privateKey });
  const other = generatePrivateKey();
  assert.deepEqual(diffWireGuard(state([]), config([], { privateKey: other })).interface, { privateKey: other });
});

test('two desired peers with one key are a config error naming both', () => {
  assert.throws(
    () => diffWireGuard(state([]), config([want(k1, { names: ['a'] }), want(k1, { names: ['b'] })])),
    (e: Error) => e instanceof WireGuardConfigError && e.message.includes(k1) && /a and b/.test(e.message),
  );
});

test("a device with no key yet takes the config's, which must still be a key", () => {
  assert.equal(diffWireGuard(state([], { publicKey: null }), config([])).interface.privateKey, privateKey);
  assert.throws(
    () => diffWireGuard(state([], { publicKey: null }), config([], { privateKey: 'not a key' })),
    (e: Error) => e instanceof TypeError && !e.message.includes('not a key'),
  );
});

test('describeDiff names every change and no secret', () => {
  const other = generatePrivateKey();
  const diff = diffWireGuard(
    state([have(k2, { hasPresharedKey: true })]),
    config([want(k1, { presharedKey: psk, allowedIPs: ['10.4.0.1/32'] }), want(k2)], {
      privateKey: other,
      fwmark: 0x1107,
    }),
  );
  const lines = describeDiff('kilo0', diff);
  assert.deepEqual(lines, [
    `wireguard kilo0: fwmark 0x1107 private-key changed (public key ${publicKeyOf(other)})`,
    `wireguard kilo0: update peer ${k2} preshared-key removed`,
    `wireguard kilo0: add peer ${k1} allowed-ips 10.4.0.1/32 preshared-key set`,
  ]);
  assert.ok(!lines.join('\n').includes(other) && !lines.join('\n').includes(psk));
  // The count a device reports without describing (writesOf) is the number of these lines.
  assert.equal(writesOf(diff), lines.length);
  for (const d of [
    diffWireGuard(state([have(k1)]), config([want(k1)])),
    diffWireGuard(state([have(k1)]), config([want(k1)], { listenPort: 7 })),
    diffWireGuard(state([have(k1)]), config([want(k2)], { fwmark: 3 })),
    diffWireGuard({ ...state([]), publicKey: null }, config([want(k1), want(k2)])),
  ])
    assert.equal(writesOf(d), describeDiff('kilo0', d).length);
});

test('wg set: one invocation, interface first, secrets only as file paths', () => {
  const other = generatePrivateKey();
  const current = state([have(k1, { hasPresharedKey: true, persistentKeepalive: 5 }), have(k2)], { listenPort: 1 });
  const diff = diffWireGuard(
    current,
    config(
      [
        want(k1),
        want(k3, { endpoint: '[2001:db8::3]:51820', allowedIPs: ['10.4.0.3/32', 'fd42::/64'], presharedKey: psk }),
      ],
      { privateKey: other, fwmark: 0x10 },
    ),
  );
  const files = new Map<string, string>();
  const cmds = wgSetCommands('kilo0', diff, (secret) => {
    const path = `/private/k${files.size}`;
    files.set(path, secret);
    return path;
  });
  assert.deepEqual(cmds, [
    [
      'wg',
      'set',
      'kilo0',
      'listen-port',
      '51820',
      'fwmark',
      '0x10',
      'private-key',
      '/private/k0',
      'peer',
      k2,
      'remove',
      'peer',
      k1,
      'persistent-keepalive',
      'off',
      'preshared-key',
      '/dev/null',
      'peer',
      k3,
      'endpoint',
      '[2001:db8::3]:51820',
      'allowed-ips',
      '10.4.0.3/32,fd42::/64',
      'preshared-key',
      '/private/k1',
    ],
  ]);
  assert.deepEqual([...files.values()], [other, psk]);
  assert.ok(!cmds.flat().some((a) => a.includes(other) || a.includes(psk)));
});

test('wg set: an argv over budget splits into ordered invocations, each a complete command', () => {
  const keys = Array.from({ length: 50 }, () => publicKeyOf(generatePrivateKey()));
  const diff = diffWireGuard(state([]), config(keys.map((k, i) => want(k, { allowedIPs: [`10.4.0.${i + 1}/32`] }))));
  const cmds = wgSetCommands('kilo0', diff, () => '/unused', 2_000);
  assert.ok(cmds.length > 1);
  for (const c of cmds) assert.deepEqual(c.slice(0, 3), ['wg', 'set', 'kilo0']);
  const peers = cmds.flatMap((c) => c.filter((_, i) => c[i - 1] === 'peer'));
  assert.deepEqual(
    peers,
    diff.peers.map((p) => p.publicKey),
  );
  assert.deepEqual(wgSetCommands('kilo0', diff, () => '/unused').length, 1);
});

test('an allowed IP is normalized to what Cidr makes of it, canonical IPv4 prefixes taken as they are', () => {
  for (const text of [
    '10.4.0.1/32',
    '10.42.0.0/24',
    '0.0.0.0/0',
    '10.42.0.1/24',
    '010.42.0.0/24',
    '10.42.0.0/024',
    '10.42.0.0/33',
    ' 10.42.0.0/24',
    '10.4.0.1',
    '255.255.255.255/32',
    'fd42::/64',
    'FD42:0::1/128',
    'not an ip',
  ]) {
    const v = text.trim();
    assert.equal(normalizeAllowedIP(text), Cidr.tryParse(v)?.networkText ?? v, text);
  }
});
