import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { test } from 'node:test';
import type { WireGuardConfig } from '../../src/dataplane/types.js';
import { createWireGuardDevice, type LinuxWireGuardDevice } from '../../src/dataplane/wireguard/device.js';
import type { PlanPeer } from '../../src/mesh/types.js';
import { parseDump } from '../../src/wireguard/dump.js';
import { generatePrivateKey, publicKeyOf } from '../../src/wireguard/keys.js';
import { createNamespace, skipNoNetns, type TestNamespace } from '../helpers/netns.js';

if (!skipNoNetns) mkdirSync('/var/run/wireguard', { recursive: true });

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function segment(name: string, privateKey: string, endpoint: string, wireGuardIP: string): PlanPeer {
  return {
    kind: 'segment',
    names: [name],
    publicKey: publicKeyOf(privateKey),
    endpoint,
    allowedIPs: [`${wireGuardIP}/32`],
    persistentKeepalive: 0,
    presharedKey: null,
  };
}

function strangers(n: number, base: number): PlanPeer[] {
  return Array.from({ length: n }, (_, i) => ({
    kind: 'peer' as const,
    names: [`stranger-${base + i}`],
    publicKey: publicKeyOf(generatePrivateKey()),
    endpoint: `192.0.2.${(base + i) % 250}:51820`,
    allowedIPs: [`10.99.${base + i}.0/24`],
    persistentKeepalive: 0,
    presharedKey: generatePrivateKey(),
  }));
}

/** The latest handshake with `publicKey` as `wg show dump` itself reports it. */
function handshakeOf(ns: TestNamespace, publicKey: string): number {
  const peer = parseDump(ns.sh('wg show kilo0 dump')).state.peers.find((p) => p.publicKey === publicKey);
  assert.ok(peer, `no peer ${publicKey} on ${ns.name}`);
  return peer.latestHandshake;
}

function ping(ns: TestNamespace, ip: string): void {
  // The first packet waits for the handshake; a few tries absorb a slow, loaded machine.
  ns.sh(`ping -c 1 -W 3 ${ip} >/dev/null || ping -c 1 -W 3 ${ip} >/dev/null || ping -c 2 -W 3 ${ip} >/dev/null`);
}

test(
  "two nodes over wireguard-go: reconfiguring other peers keeps the talking peer's session",
  { skip: skipNoNetns },
  async (t) => {
    const a = createNamespace('ktwa');
    const b = createNamespace('ktwb');
    const log: string[] = [];
    const devA = createWireGuardDevice(a.exec, { name: 'kilo0', log: (l) => log.push(l) });
    const devB = createWireGuardDevice(b.exec, { name: 'kilo0', log: (l) => log.push(l) });
    t.after(async () => {
      // wireguard-go first (by the PID each device started), then the namespaces.
      await Promise.allSettled([devA.destroy(), devB.destroy()]);
      a.destroy();
      b.destroy();
    });

    a.sh(`ip link add eth0 type veth peer name eth0 netns ${b.name}`);
    a.sh('ip addr add 192.168.77.1/24 dev eth0 && ip link set eth0 up');
    b.sh('ip addr add 192.168.77.2/24 dev eth0 && ip link set eth0 up');

    const keyA = generatePrivateKey();
    const keyB = generatePrivateKey();
    const peerB = segment('node-b', keyB, '192.168.77.2:51820', '10.4.0.2');
    const peerA = segment('node-a', keyA, '192.168.77.1:51820', '10.4.0.1');
    const configA = (others: PlanPeer[]): WireGuardConfig => ({
      privateKey: keyA,
      listenPort: 51820,
      peers: [...others, peerB],
    });
    const configB: WireGuardConfig = { privateKey: keyB, listenPort: 51820, peers: [peerA] };

    const up = async (ns: TestNamespace, dev: LinuxWireGuardDevice, address: string) => {
      await dev.ensure();
      ns.sh(`ip addr add ${address} dev kilo0 && ip link set kilo0 up`);
    };
    await up(a, devA, '10.4.0.1/16');
    await up(b, devB, '10.4.0.2/16');
    const first = strangers(20, 0);
    assert.deepEqual((await devA.configure(configA(first))).added.length, 21);
    await devB.configure(configB);

    ping(a, '10.4.0.2');
    const handshakeA = handshakeOf(a, peerB.publicKey);
    const handshakeB = handshakeOf(b, peerA.publicKey);
    assert.ok(handshakeA > 0 && handshakeB > 0, 'the ping made a handshake');
    const stats = (await devA.read()).peers.find((p) => p.publicKey === peerB.publicKey)!;
    assert.ok(
      stats.latestHandshake === handshakeA && stats.rxBytes > 0 && stats.txBytes > 0,
      'read() reports handshake and transfer',
    );

    // A new handshake would now carry a later second: wait so "unchanged" cannot be a coincidence.
    await sleep(1100);

    await t.test('adding and removing other peers leaves the talking peer alone', async () => {
      const second = strangers(20, 100);
      const changes = await devA.configure(configA([...first.slice(10), ...second]));
      assert.deepEqual(changes, {
        added: second.map((p) => p.publicKey).sort(),
        removed: first
          .slice(0, 10)
          .map((p) => p.publicKey)
          .sort(),
        updated: [],
      });
      assert.deepEqual(await devA.configure(configA([])), {
        added: [],
        removed: [...first.slice(10), ...second].map((p) => p.publicKey).sort(),
        updated: [],
      });
      assert.deepEqual(await devB.configure(configB), { added: [], removed: [], updated: [] });

      assert.equal(handshakeOf(a, peerB.publicKey), handshakeA, 'A kept its session with B');
      assert.equal(handshakeOf(b, peerA.publicKey), handshakeB, 'B kept its session with A');
      ping(a, '10.4.0.2');
      ping(b, '10.4.0.1');
      assert.equal(handshakeOf(a, peerB.publicKey), handshakeA, 'traffic flowed on the old session');
    });

    await t.test('control: replacing the peer (what Kilo does) does reset its session', async () => {
      await devA.configure(configA([]));
      assert.deepEqual(await devA.configure({ ...configA([]), peers: [] }), {
        added: [],
        removed: [peerB.publicKey],
        updated: [],
      });
      assert.deepEqual(await devA.configure(configA([])), { added: [peerB.publicKey], removed: [], updated: [] });
      assert.equal(handshakeOf(a, peerB.publicKey), 0);
      ping(a, '10.4.0.2');
      assert.ok(handshakeOf(a, peerB.publicKey) > handshakeA, 'a new handshake happened');
    });

    await t.test('no key appears in a log line or Ops', () => {
      const text = [...log, ...devA.lastOps.details, ...devB.lastOps.details].join('\n');
      assert.ok(
        log.some((l) => l.includes('add peer')),
        'changes were logged',
      );
      for (const secret of [keyA, keyB, ...first.map((p) => p.presharedKey!)]) assert.ok(!text.includes(secret));
    });
  },
);
