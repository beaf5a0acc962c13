import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { renderIni, type IniConfig } from '../../src/wireguard/ini.js';
import { IniParseError, parseIni } from '../helpers/wg-ini.js';

const keyA = 'kvJN7utqQPVQCfuBMMOVUNJRYlSwI0qNAhApTK5WSX4=';
const keyB = 'y8Kh/6BAr+zV1N6Q3eB3voAIeCrvRpq5m2aoUsLVgB0=';
const secret = 'aHR0cHM6Ly9leGFtcGxlLmNvbS9ub3QtYS1yZWFsLWs=';

const full: IniConfig = {
  interface: { privateKey: secret, listenPort: 51820, address: ['10.4.0.6/16'] },
  peers: [
    {
      comment: 'aws-euw-1',
      publicKey: keyA,
      allowedIPs: ['10.42.0.0/24', '172.31.20.11/32', '10.4.0.1/32'],
      endpoint: '198.51.100.11:51820',
      persistentKeepalive: 25,
    },
    {
      comment: 'alice-laptop (Peer)',
      publicKey: keyB,
      presharedKey: secret,
      allowedIPs: ['10.5.0.1/32'],
      endpoint: null,
      persistentKeepalive: 0,
    },
  ],
};

describe('renderIni', () => {
  test("renders Kilo's layout: sections split by a blank line, peer keys in Kilo's order", () => {
    assert.equal(
      renderIni(full),
      [
        '[Interface]',
        `PrivateKey = ${secret}`,
        'ListenPort = 51820',
        'Address = 10.4.0.6/16',
        '',
        '[Peer]',
        '# aws-euw-1',
        'AllowedIPs = 10.42.0.0/24, 172.31.20.11/32, 10.4.0.1/32',
        'Endpoint = 198.51.100.11:51820',
        'PersistentKeepalive = 25',
        `PublicKey = ${keyA}`,
        '',
        '[Peer]',
        '# alice-laptop (Peer)',
        'AllowedIPs = 10.5.0.1/32',
        `PresharedKey = ${secret}`,
        `PublicKey = ${keyB}`,
        '',
      ].join('\n'),
    );
  });

  test('omits the private key, address, endpoint and a zero keepalive when absent', () => {
    const text = renderIni({
      interface: { listenPort: 51820 },
      peers: [{ publicKey: keyA, allowedIPs: ['10.42.0.0/24'], persistentKeepalive: 0 }],
    });
    assert.equal(text, `[Interface]\nListenPort = 51820\n\n[Peer]\nAllowedIPs = 10.42.0.0/24\nPublicKey = ${keyA}\n`);
  });

  test('peers only (no [Interface]) start with [Peer]', () => {
    assert.equal(
      renderIni({ interface: null, peers: [{ publicKey: keyA, allowedIPs: [] }] }),
      `[Peer]\nPublicKey = ${keyA}\n`,
    );
  });

  test('a newline in a comment cannot inject a key', () => {
    const text = renderIni({
      interface: null,
      peers: [{ comment: 'x\nPublicKey = evil', publicKey: keyA, allowedIPs: [] }],
    });
    assert.equal(parseIni(text).peers[0]!.publicKey, keyA);
    assert.equal(text.split('\n').filter((l) => l.startsWith('PublicKey')).length, 1);
  });
});

describe('parseIni', () => {
  test('round-trips what renderIni writes', () => {
    const back = parseIni(renderIni(full));
    assert.deepEqual(back, {
      interface: full.interface,
      peers: [
        { ...full.peers[0], persistentKeepalive: 25 },
        { comment: 'alice-laptop (Peer)', publicKey: keyB, presharedKey: secret, allowedIPs: ['10.5.0.1/32'] },
      ],
    });
  });

  test('reads wg showconf output: case-insensitive keys, repeated AllowedIPs, FwMark, off, trailing comments', () => {
    const conf = parseIni(
      [
        '[interface]',
        'listenport = 51821',
        'FwMark = 0x4d2',
        'DNS = 10.43.0.10',
        '',
        '[Peer]',
        `PublicKey = ${keyA}   # the aws node`,
        'AllowedIPs = 10.42.0.0/24,10.4.0.1/32',
        'AllowedIPs = fd00::/64',
        'Endpoint = [2001:db8::1]:51820',
        'PersistentKeepalive = off',
      ].join('\r\n'),
    );
    assert.deepEqual(conf.interface, { listenPort: 51821, fwMark: 0x4d2 });
    assert.deepEqual(conf.peers, [
      {
        publicKey: keyA,
        allowedIPs: ['10.42.0.0/24', '10.4.0.1/32', 'fd00::/64'],
        endpoint: '[2001:db8::1]:51820',
        persistentKeepalive: 0,
      },
    ]);
  });

  const bad: [string, string, RegExp][] = [
    ['bad public key', `[Peer]\nPublicKey = abc`, /line 2: \[Peer\]: PublicKey: not a WireGuard key .*: "abc"/],
    ['missing public key', `[Peer]\nAllowedIPs = 10.0.0.0/8`, /line 1: \[Peer\]: PublicKey: missing/],
    [
      'bad allowed IP',
      `[Peer]\nPublicKey = ${keyA}\nAllowedIPs = 10.0.0.0/8, 10.1.2/33`,
      /line 3: \[Peer\]: AllowedIPs: not a CIDR: "10.1.2\/33"/,
    ],
    [
      'bad endpoint',
      `[Peer]\nPublicKey = ${keyA}\nEndpoint = 1.2.3.4`,
      /line 3: \[Peer\]: Endpoint: not an endpoint .*"1.2.3.4"/,
    ],
    [
      'bad keepalive',
      `[Peer]\nPublicKey = ${keyA}\nPersistentKeepalive = 70000`,
      /line 3: .*PersistentKeepalive.*"70000"/,
    ],
    ['bad port', `[Interface]\nListenPort = 99999`, /line 2: \[Interface\]: ListenPort: not a port .*"99999"/],
    ['unknown key', `[Interface]\nColour = blue`, /line 2: \[Interface\]: Colour: unknown key: "blue"/],
    ['unknown section', `[Tunnel]`, /line 1: unknown section \[Tunnel\]/],
    ['key outside a section', `ListenPort = 1`, /line 1: "ListenPort" outside of any section/],
    ['garbage line', `[Interface]\nListenPort`, /line 2: not a section header/],
    ['second interface', `[Interface]\n[Interface]`, /line 2: a second \[Interface\]/],
  ];
  for (const [name, text, message] of bad) {
    test(`rejects ${name} with the line, key and value`, () => {
      assert.throws(
        () => parseIni(text),
        (e: unknown) => e instanceof IniParseError && message.test(e.message),
      );
    });
  }

  test('never puts a secret value in an error', () => {
    const notQuiteKey = `${secret.slice(0, 40)}!!=`;
    for (const text of [
      `[Interface]\nPrivateKey = ${notQuiteKey}`,
      `[Peer]\nPublicKey = ${keyA}\nPresharedKey = ${notQuiteKey}`,
    ]) {
      assert.throws(
        () => parseIni(text),
        (e: unknown) =>
          e instanceof IniParseError &&
          !e.message.includes(notQuiteKey.slice(0, 20)) &&
          e.message.includes('(value hidden)'),
      );
    }
  });
});
