import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { baselineScript, commandOutput, plainToolsInput, type Dumps } from '../../bench/plain-tools.js';

// A small plan's state as `ip -N -j` printed it in a namespace after `kg apply` (the guard's
// blackholes typed "6", IPv6 ones on lo), with rules of Kilo's (priority 1107) and the kernel's.
const dumps: Dumps = {
  wg: '[Interface]\nListenPort = 51820\nPrivateKey = cHJpdmF0ZQ==\n',
  routes: {
    4: JSON.stringify([
      { type: '6', dst: '10.4.0.0/16', metric: 1, flags: [] },
      { dst: '10.5.0.1', dev: 'kbs1', scope: '253', prefsrc: '172.16.0.1', flags: [] },
      { type: '6', dst: '10.5.0.1', metric: 1, flags: [] },
      { dst: '172.17.48.10', gateway: '10.4.0.12', dev: 'kbs1', prefsrc: '172.16.0.1', flags: ['onlink'] },
      { dst: '10.42.1.0/24', gateway: '172.16.0.2', dev: 'priv0', table: '1107', flags: [] },
    ]),
    6: JSON.stringify([
      { dst: 'fd42:1::/64', gateway: 'fd10::2', dev: 'priv0', table: '1107', metric: 1024, flags: [], pref: 'medium' },
      { type: '6', dst: 'fd4b::/64', dev: 'lo', metric: 1, flags: [], pref: 'medium' },
    ]),
  },
  rules: {
    4: JSON.stringify([
      { priority: 0, src: 'all', table: '255' },
      { priority: 1107, src: 'all', dst: '10.42.1.0', dstlen: 24, iif: 'kbs1', table: '1107' },
      { priority: 1107, src: '10.42.0.0', srclen: 24, dst: '10.42.1.0', dstlen: 24, table: '1107' },
      { priority: 32766, src: 'all', table: '254' },
      { priority: 32767, src: 'all', table: '253' },
    ]),
    6: JSON.stringify([
      { priority: 0, src: 'all', table: '255' },
      { priority: 1107, src: 'all', dst: 'fd42:1::', dstlen: 64, table: '1107' },
      { priority: 32766, src: 'all', table: '254' },
    ]),
  },
  link: JSON.stringify([
    {
      ifname: 'kbs1',
      mtu: 1420,
      addr_info: [
        { family: 'inet', local: '10.4.0.1', prefixlen: 16, scope: 'global' },
        { family: 'inet6', local: 'fe80::a51f:8a1e:13d0:6cad', prefixlen: 64, scope: 'link' },
      ],
    },
  ]),
  iptables: '*nat\n:KILO-NAT - [0:0]\nCOMMIT\n',
  ip6tables: '*nat\n:KILO-NAT - [0:0]\nCOMMIT\n',
};

test("the plain tools' input: every route of Kilo's as ip -batch takes it, typed by name; Kilo's rules with to, IPv6 rules apart", () => {
  const input = plainToolsInput(dumps);
  assert.deepEqual(input.ipBatch, [
    'route add blackhole 10.4.0.0/16 table 254 metric 1 proto 107',
    'route add 10.5.0.1/32 dev kbs1 src 172.16.0.1 table 254 metric 0 proto 107',
    'route add blackhole 10.5.0.1/32 table 254 metric 1 proto 107',
    'route add 172.17.48.10/32 via 10.4.0.12 dev kbs1 src 172.16.0.1 onlink table 254 metric 0 proto 107',
    'route add 10.42.1.0/24 via 172.16.0.2 dev priv0 table 1107 metric 0 proto 107',
    'route add fd42:1::/64 via fd10::2 dev priv0 table 1107 metric 1024 proto 107',
    'route add blackhole fd4b::/64 dev lo table 254 metric 1 proto 107',
    'rule add to 10.42.1.0/24 iif kbs1 lookup 1107 priority 1107',
    'rule add from 10.42.0.0/24 to 10.42.1.0/24 lookup 1107 priority 1107',
  ]);
  assert.deepEqual(input.ip6Batch, ['rule add to fd42:1::/64 lookup 1107 priority 1107']);
  // The kernel's own link-local address comes with the interface; adding it again would fail.
  assert.deepEqual(input.addresses, ['10.4.0.1/16']);
  assert.equal(input.mtu, 1420);
  assert.equal(input.wgConf, dumps.wg);
  assert.equal(input.iptables, dumps.iptables);
  const script = baselineScript('kbs1', input, (name) => `/w/${name}`);
  assert.match(
    script,
    /^set -e\nwireguard-go kbs1\nip addr add 10\.4\.0\.1\/16 dev kbs1\nip link set kbs1 mtu 1420 up\n/,
  );
  assert.match(script, /\nwg setconf kbs1 \/w\/wg\.conf\nip -batch \/w\/ip\.batch\nip -6 -batch \/w\/ip6\.batch\n/);
  assert.match(script, /\niptables-restore \/w\/iptables\nip6tables-restore \/w\/ip6tables\n$/);
  // No IPv6 rule: no `ip -6 -batch` (of an empty file).
  const noRules6 = plainToolsInput({ ...dumps, rules: { ...dumps.rules, 6: '[]' } });
  assert.doesNotMatch(
    baselineScript('kbs1', noRules6, (name) => `/w/${name}`),
    /ip -6 -batch/,
  );
});

test("a dump is read whole: 20,000 peers' `wg showconf` (~3 MB, past spawnSync's default buffer)", () => {
  const dir = mkdtempSync(join(tmpdir(), 'kts-plain-tools-'));
  try {
    const peers = Array.from({ length: 20_000 }, (_, i) => {
      const key = Buffer.alloc(32, i).toString('base64');
      const ip = `10.${42 + (i >> 16)}.${(i >> 8) & 0xff}.${i & 0xff}`;
      return `[Peer]\nPublicKey = ${key}\nAllowedIPs = 10.${(i >> 8) & 0xff}.${i & 0xff}.0/24, ${ip}/32\nEndpoint = 172.16.${(i >> 8) & 0xff}.${i & 0xff}:51820\nPersistentKeepalive = 25\n\n`;
    });
    const config = `[Interface]\nListenPort = 51820\n\n${peers.join('')}`;
    assert.ok(config.length > 2 << 20);
    const file = join(dir, 'wg.conf');
    writeFileSync(file, config);
    const input = plainToolsInput({ ...dumps, wg: commandOutput(['cat', file]) });
    assert.equal(input.wgConf.length, config.length);
    assert.equal(input.wgConf.split('\n').filter((l) => l === '[Peer]').length, 20_000);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a tool that fails is an error naming it, not an empty dump', () => {
  assert.throws(
    () => commandOutput(['sh', '-c', 'echo half; echo "no such device" >&2; exit 1']),
    /sh -c .*: exit 1: no such device/,
  );
  assert.throws(() => commandOutput(['kts-no-such-tool']), /kts-no-such-tool: .*ENOENT/);
});
