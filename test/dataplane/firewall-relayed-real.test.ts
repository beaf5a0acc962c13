import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { LinuxFirewallTables } from '../../src/dataplane/iptables/tables.js';
import { LinuxNftablesTables } from '../../src/dataplane/nftables/tables.js';
import type { FirewallTables, RelayedCount } from '../../src/dataplane/types.js';
import { createWireGuardDevice, type LinuxWireGuardDevice } from '../../src/dataplane/wireguard/device.js';
import type { Firewall, PlanPeer } from '../../src/mesh/types.js';
import { generatePrivateKey, publicKeyOf } from '../../src/wireguard/keys.js';
import { createNamespace, skipNoNetns, type TestNamespace } from '../helpers/netns.js';

/**
 * A relay in the kernel, both firewall backends: three namespaces running wireguard-go, a and b
 * each linked only to r (no path between them), r a WireGuard peer of both with their pods' CIDRs,
 * a and b each holding the other's pods on their entry for r: what a sends b's pods goes into r's
 * kilo0 and out of it again. r's own pod (a fourth namespace behind a veth) is forwarded too, but
 * not kilo0 → kilo0; r's WireGuard IP is r's own. Only the first is counted, to the byte.
 */

if (!skipNoNetns) mkdirSync('/var/run/wireguard', { recursive: true });

const pingBytes = 1000;
/** IPv4 packet size of one ping of `pingBytes` (20 bytes of IP header, 8 of ICMP). */
const packetBytes = pingBytes + 28;

function peer(name: string, key: string, endpoint: string, allowedIPs: string[]): PlanPeer {
  return {
    kind: 'segment',
    names: [name],
    publicKey: publicKeyOf(key),
    endpoint,
    allowedIPs,
    persistentKeepalive: 0,
    presharedKey: null,
  };
}

const firewall: Firewall = {
  masquerade: { podCIDRs: [], allowedLocationIPs: [], peerAllowedIPs: [], exceptions: [] },
  forwardPodCIDRs: [],
  ipip: null,
  countRelayed: true,
};

describe('relayed traffic counter in network namespaces, over wireguard-go', { skip: skipNoNetns }, () => {
  let a: TestNamespace, b: TestNamespace, r: TestNamespace, pod: TestNamespace;
  const devices: LinuxWireGuardDevice[] = [];

  before(async () => {
    a = createNamespace('ktra');
    b = createNamespace('ktrb');
    r = createNamespace('ktrr');
    pod = createNamespace('ktrp');
    r.sh(`ip link add eth-a type veth peer name eth0 netns ${a.name}`);
    r.sh(`ip link add eth-b type veth peer name eth0 netns ${b.name}`);
    r.sh(`ip link add pods type veth peer name eth0 netns ${pod.name}`);
    r.sh('ip addr add 192.168.71.2/24 dev eth-a && ip link set eth-a up');
    r.sh('ip addr add 192.168.72.2/24 dev eth-b && ip link set eth-b up');
    r.sh('ip addr add 10.42.2.1/24 dev pods && ip link set pods up && sysctl -qw net.ipv4.ip_forward=1');
    a.sh('ip addr add 192.168.71.1/24 dev eth0 && ip link set eth0 up');
    b.sh('ip addr add 192.168.72.3/24 dev eth0 && ip link set eth0 up');
    pod.sh('ip addr add 10.42.2.2/24 dev eth0 && ip link set eth0 up && ip route add default via 10.42.2.1');
    // The ends' pods: an address of their own (on lo: this kernel may have no dummy interfaces).
    a.sh('ip addr add 10.42.1.1/32 dev lo');
    b.sh('ip addr add 10.42.3.1/32 dev lo');

    const [ka, kb, kr] = [generatePrivateKey(), generatePrivateKey(), generatePrivateKey()];
    const setups: [TestNamespace, string, string, PlanPeer[]][] = [
      [a, ka, '10.4.0.1', [peer('r', kr, '192.168.71.2:51820', ['10.4.0.2/32', '10.42.2.0/24', '10.42.3.0/24'])]],
      [b, kb, '10.4.0.3', [peer('r', kr, '192.168.72.2:51820', ['10.4.0.2/32', '10.42.2.0/24', '10.42.1.0/24'])]],
      [
        r,
        kr,
        '10.4.0.2',
        [
          peer('a', ka, '192.168.71.1:51820', ['10.4.0.1/32', '10.42.1.0/24']),
          peer('b', kb, '192.168.72.3:51820', ['10.4.0.3/32', '10.42.3.0/24']),
        ],
      ],
    ];
    for (const [ns, key, ip, peers] of setups) {
      const dev = createWireGuardDevice(ns.exec, { name: 'kilo0' });
      devices.push(dev);
      await dev.ensure();
      await dev.configure({ privateKey: key, listenPort: 51820, peers });
      ns.sh(`ip addr add ${ip}/16 dev kilo0 && ip link set kilo0 up && ip route add 10.42.0.0/16 dev kilo0`);
    }
    r.sh(
      'ip route del 10.42.0.0/16 dev kilo0 && ip route add 10.42.1.0/24 dev kilo0 && ip route add 10.42.3.0/24 dev kilo0',
    );
    // The first packets wait for the handshakes; a few tries absorb a loaded machine.
    for (let i = 0; i < 20; i++) {
      try {
        a.sh('ping -c 1 -W 2 -I 10.42.1.1 10.42.3.1 >/dev/null');
        break;
      } catch {
        if (i === 19) throw new Error('a cannot reach b through r');
      }
    }
  });

  after(async () => {
    // wireguard-go by the PID each device started, then the namespaces.
    await Promise.allSettled(devices.map((d) => d.destroy()));
    for (const ns of [a, b, r, pod]) ns?.destroy();
  });

  const backends: Record<string, () => FirewallTables> = {
    iptables: () => new LinuxFirewallTables(r.exec),
    nftables: () => new LinuxNftablesTables(r.exec),
  };
  for (const [name, make] of Object.entries(backends)) {
    test(`${name}: counts what r relays between a and b, not what it forwards to its own pod or receives`, async () => {
      const tables = make();
      try {
        await tables.reconcile(firewall);
        const start = await tables.readRelayed();
        assert.ok(start !== null, 'the rule is there');
        const grew = async (): Promise<RelayedCount> => {
          const now = (await tables.readRelayed())!;
          return { packets: now.packets - start.packets, bytes: now.bytes - start.bytes };
        };
        // Not relayed: to r's pod (kilo0 → pods), to r itself (input), from r's pod to a (pods → kilo0).
        a.sh(`ping -c 3 -i 0.2 -s ${pingBytes} -I 10.42.1.1 10.42.2.2 >/dev/null`);
        a.sh(`ping -c 3 -i 0.2 -s ${pingBytes} -I 10.42.1.1 10.4.0.2 >/dev/null`);
        pod.sh(`ping -c 3 -i 0.2 -s ${pingBytes} 10.42.1.1 >/dev/null`);
        assert.deepEqual(await grew(), { packets: 0, bytes: 0 }, 'nothing relayed yet');
        // Relayed: 5 requests a → b and their 5 replies b → a, each through kilo0 → kilo0. A run
        // that lost a packet (a loaded machine) says nothing exact: the figures are taken again.
        let relayed: RelayedCount | null = null;
        for (let attempt = 0; attempt < 3 && relayed === null; attempt++) {
          const before = await grew();
          const said = a.sh(`ping -c 5 -i 0.2 -s ${pingBytes} -I 10.42.1.1 10.42.3.1 || true`);
          const after = await grew();
          if (/ 5 received/.test(said))
            relayed = { packets: after.packets - before.packets, bytes: after.bytes - before.bytes };
        }
        assert.deepEqual(relayed, { packets: 10, bytes: 10 * packetBytes });
        // Kilo's accepts in FORWARD change (rules inserted after the counting one, a chain refilled): the figures stay.
        const kept = await grew();
        await tables.reconcile({ ...firewall, forwardPodCIDRs: ['10.42.9.0/24'] });
        await tables.reconcile({ ...firewall, forwardPodCIDRs: ['10.42.8.0/24', '10.42.9.0/24'] });
        assert.deepEqual(await grew(), kept, 'kept through the edits');
        // Relaying no more: the rule goes.
        await tables.reconcile({ ...firewall, countRelayed: undefined });
        assert.equal(await tables.readRelayed(), null);
      } finally {
        await tables.cleanup();
      }
    });
  }
});
