import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { WireGuardConfig } from '../../src/dataplane/types.js';
import { diffWireGuard, isEmptyDiff, type WireGuardDiff } from '../../src/dataplane/wireguard/diff.js';
import { uapiHolds, uapiUnsettled } from '../../src/dataplane/wireguard/once.js';
import { parseUapiGet } from '../../src/dataplane/wireguard/uapi.js';
import type { PlanPeer } from '../../src/mesh/types.js';
import { generatePrivateKey, publicKeyOf } from '../../src/wireguard/keys.js';

const hex = (base64: string) => Buffer.from(base64, 'base64').toString('hex');
const zero = '0'.repeat(64);

const privateKeys = [generatePrivateKey(), generatePrivateKey()];
const publicKeys = [0, 1, 2, 3].map(() => publicKeyOf(generatePrivateKey()));
/** The first key's bytes in a text that is not base64's own (the last character's unused bits set). */
const alias = (key: string) => {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  return `${key.slice(0, 42)}${alphabet[alphabet.indexOf(key[42]!) | 1]}=`;
};
const presharedKeys = [generatePrivateKey(), generatePrivateKey()];
const endpoints = [
  '192.0.2.1:51820',
  '192.0.2.2:51820',
  '[2001:db8::2]:51820',
  '[2001:db8:0::2]:51820',
  '192.0.2.1:051820',
];
const ips = ['10.4.0.1/32', '10.42.1.0/24', '10.42.1.7/24', 'fd42::/64', 'fd42:0::/64', '10.4.0.2/32'];

const peer: fc.Arbitrary<PlanPeer> = fc.record({
  kind: fc.constant('segment' as const),
  names: fc.constant(['node']),
  publicKey: fc.constantFrom(...publicKeys, alias(publicKeys[0]!)),
  endpoint: fc.constantFrom(null, ...endpoints),
  allowedIPs: fc.array(fc.constantFrom(...ips), { maxLength: 4 }),
  persistentKeepalive: fc.constantFrom(0, 25),
  presharedKey: fc.constantFrom(null, ...presharedKeys, alias(presharedKeys[0]!)),
});

const config: fc.Arbitrary<WireGuardConfig> = fc.record(
  {
    privateKey: fc.constantFrom(...privateKeys, ...privateKeys, 'not a key'),
    listenPort: fc.constantFrom(0, 51820, 51821),
    fwmark: fc.constantFrom(0, 0x1107),
    peers: fc.array(peer, { maxLength: 4 }),
  },
  { requiredKeys: ['privateKey', 'listenPort', 'peers'] },
);

/** A device holding `c` as wireguard-go prints it (`order` shuffles peers and allowed IPs), the texts as they are. */
function answer(c: WireGuardConfig, order: number[]): string {
  const shuffle = <T>(xs: readonly T[]) =>
    xs
      .map((x, i) => [x, order[i % order.length]! + i] as const)
      .sort((a, b) => a[1] - b[1])
      .map(([x]) => x);
  const lines = c.privateKey === 'not a key' ? [] : [`private_key=${hex(c.privateKey)}`];
  lines.push(`listen_port=${c.listenPort}`);
  if (c.fwmark) lines.push(`fwmark=${c.fwmark}`);
  for (const p of shuffle(c.peers)) {
    lines.push(`public_key=${hex(p.publicKey)}`, `preshared_key=${p.presharedKey ? hex(p.presharedKey) : zero}`);
    lines.push('protocol_version=1');
    if (p.endpoint) lines.push(`endpoint=${p.endpoint}`);
    lines.push('last_handshake_time_sec=1700000000', 'last_handshake_time_nsec=5', 'tx_bytes=92', 'rx_bytes=148');
    lines.push(`persistent_keepalive_interval=${p.persistentKeepalive}`);
    lines.push(...shuffle(p.allowedIPs).map((ip) => `allowed_ip=${ip}`));
  }
  return lines.join('\n');
}

/** Lines a device could print that change the meaning of an answer, or not. */
const junk = [
  'allowed_ip=10.4.0.1/32',
  'allowed_ip=10.4.0.9/32',
  'endpoint=192.0.2.1:51820',
  `preshared_key=${zero}`,
  `preshared_key=${hex(presharedKeys[0]!)}`,
  'persistent_keepalive_interval=0',
  'persistent_keepalive_interval=25',
  `private_key=${hex(privateKeys[0]!)}`,
  `private_key=${zero}`,
  'listen_port=51820',
  'fwmark=0',
  'fwmark=4359',
  `public_key=${hex(publicKeys[1]!)}`,
  'protocol_version=1',
  'no equals sign',
  'endpoint',
  '',
];

type Edit = { kind: 'delete' | 'duplicate' | 'insert' | 'swap'; at: number; other: number; line: string };
const edit: fc.Arbitrary<Edit> = fc.record({
  kind: fc.constantFrom('delete', 'duplicate', 'insert', 'swap'),
  at: fc.nat(60),
  other: fc.nat(60),
  line: fc.constantFrom(...junk),
});

function edited(text: string, edits: Edit[]): string {
  const lines = text.split('\n');
  for (const e of edits) {
    const at = e.at % (lines.length + 1);
    if (e.kind === 'insert') lines.splice(at, 0, e.line);
    else if (at === lines.length) continue;
    else if (e.kind === 'delete') lines.splice(at, 1);
    else if (e.kind === 'duplicate') lines.splice(at, 0, lines[at]!);
    else {
      const other = e.other % lines.length;
      [lines[at], lines[other]] = [lines[other]!, lines[at]!];
    }
  }
  return lines.join('\n');
}

/** The full path's answer: the writes diffWireGuard makes from the parsed text (or the error it throws). */
function fullDiff(text: string, c: WireGuardConfig) {
  const { state, presharedKeyDigests } = parseUapiGet(text);
  return diffWireGuard(state, c, presharedKeyDigests);
}

const outcome = (f: () => unknown) => {
  try {
    return { diff: f() };
  } catch (e) {
    return { error: e };
  }
};

/**
 * A config and what wireguard-go answers to get=1 for it, or for another config, in some peer
 * order, then with a few lines deleted, duplicated, inserted or swapped.
 */
const deviceAnswer = fc
  .tuple(
    config,
    fc.option(config, { nil: undefined, freq: 1 }),
    fc.array(fc.nat(9), { minLength: 1, maxLength: 5 }),
    fc.oneof(fc.constant<Edit[]>([]), fc.array(edit, { maxLength: 3 })),
  )
  .map(([wanted, other, order, edits]) => ({ wanted, text: edited(answer(other ?? wanted, order), edits) }));

test('uapiUnsettled: what is left to diff has the whole answer’s diff, or its error, whatever the text', () => {
  let split = 0;
  fc.assert(
    fc.property(deviceAnswer, ({ wanted, text }) => {
      const left = uapiUnsettled(text, wanted);
      const whole = outcome(() => fullDiff(text, wanted));
      if (left === null) return assert.ok(whole.diff && isEmptyDiff(whole.diff as WireGuardDiff));
      if (left.text.length < text.length) split++;
      assert.deepEqual(
        outcome(() => fullDiff(left.text, left.config)),
        whole,
        JSON.stringify({ text, wanted }),
      );
    }),
    { numRuns: 4000 },
  );
  // Not vacuous: many answers are split, some peers settled on the text and the others left.
  assert.ok(split > 300, `only ${split} of 4000 answers were split`);
});

test('uapiHolds says a device holds a config only where the full diff writes nothing, whatever the text', () => {
  let held = 0;
  fc.assert(
    fc.property(deviceAnswer, ({ wanted, text }) => {
      if (!uapiHolds(text, wanted)) return;
      held++;
      const diff = fullDiff(text, wanted);
      assert.ok(isEmptyDiff(diff), JSON.stringify({ text, wanted, diff }));
    }),
    { numRuns: 4000 },
  );
  // Not vacuous: many of the texts are settled on the fast path.
  assert.ok(held > 300, `only ${held} of 4000 texts held their config`);
});

test('uapiHolds: a device holding the config in wireguard-go’s canonical texts is settled on the text', () => {
  const canonical = (p: PlanPeer) =>
    p.publicKey !== alias(publicKeys[0]!) &&
    p.presharedKey !== alias(presharedKeys[0]!) &&
    (p.endpoint === null || ['192.0.2.1:51820', '192.0.2.2:51820', '[2001:db8::2]:51820'].includes(p.endpoint)) &&
    p.allowedIPs.every((ip) => ['10.4.0.1/32', '10.42.1.0/24', 'fd42::/64', '10.4.0.2/32'].includes(ip)) &&
    new Set(p.allowedIPs).size === p.allowedIPs.length;
  fc.assert(
    fc.property(config, fc.array(fc.nat(9), { minLength: 1, maxLength: 5 }), (c, order) => {
      const keys = c.peers.map((p) => p.publicKey);
      fc.pre(
        c.privateKey !== 'not a key' &&
          c.peers.length > 0 &&
          c.peers.every(canonical) &&
          new Set(keys).size === keys.length,
      );
      const text = answer(c, order);
      assert.ok(isEmptyDiff(fullDiff(text, c)));
      assert.ok(uapiHolds(text, c), text);
    }),
    { numRuns: 500 },
  );
});

test('uapiHolds: many allowed IPs (a location leader) are compared as a set, not a list', () => {
  const many = Array.from({ length: 300 }, (_, i) => `10.${40 + (i >> 8)}.${i & 255}.0/24`);
  const c: WireGuardConfig = {
    privateKey: privateKeys[0]!,
    listenPort: 51820,
    peers: [
      {
        kind: 'segment',
        names: ['leader'],
        publicKey: publicKeys[0]!,
        endpoint: '192.0.2.1:51820',
        allowedIPs: many,
        persistentKeepalive: 0,
        presharedKey: null,
      },
    ],
  };
  const text = answer(c, [3, 1, 4, 1, 5, 9, 2, 6]);
  assert.ok(uapiHolds(text, c));
  const replace = (from: string, to: string) => text.replace(`allowed_ip=${from}\n`, `allowed_ip=${to}\n`);
  // One missing and another listed twice; one the plan does not have.
  assert.ok(!uapiHolds(replace(many[7]!, many[8]!), c));
  assert.ok(!uapiHolds(replace(many[7]!, '10.99.0.0/24'), c));
  assert.ok(!uapiHolds(`${text}\nallowed_ip=${many[7]}`, c));
  assert.ok(!uapiHolds(text, { ...c, peers: [{ ...c.peers[0]!, allowedIPs: [...many, many[0]!] }] }));
});

test('uapiHolds: a peer or an allowed IP listed twice, or a zero private key, is never settled on the text', () => {
  const [k1, k2] = publicKeys as [string, string];
  const bare = (publicKey: string): PlanPeer => ({
    kind: 'segment',
    names: ['node'],
    publicKey,
    endpoint: null,
    allowedIPs: [],
    persistentKeepalive: 0,
    presharedKey: null,
  });
  const c: WireGuardConfig = { privateKey: privateKeys[0]!, listenPort: 51820, peers: [bare(k1), bare(k2)] };
  const text = answer(c, [0]);
  assert.ok(uapiHolds(text, c));
  const twice = answer({ ...c, peers: [bare(k1), bare(k1)] }, [0]);
  assert.ok(!isEmptyDiff(fullDiff(twice, c)));
  assert.ok(!uapiHolds(twice, c));
  // wireguard-go lists each allowed IP once; a text with one twice and another missing is not the config.
  const two = { ...c, peers: [{ ...bare(k1), allowedIPs: ['10.4.0.1/32', '10.42.1.0/24'] }, bare(k2)] };
  const doubled = answer(two, [0]).replace('allowed_ip=10.42.1.0/24', 'allowed_ip=10.4.0.1/32');
  assert.ok(!isEmptyDiff(fullDiff(doubled, two)));
  assert.ok(!uapiHolds(doubled, two));
  const zeroKey = Buffer.alloc(32).toString('base64');
  for (const t of [answer({ ...c, privateKey: zeroKey }, [0]), text.replace(/^private_key=.*\n/, '')]) {
    assert.ok(!isEmptyDiff(fullDiff(t, { ...c, privateKey: zeroKey })));
    assert.ok(!uapiHolds(t, { ...c, privateKey: zeroKey }));
  }
});
