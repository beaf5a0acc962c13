/**
 * The contract of the host seam (src/host/host.ts): what the agent reads from the machine
 * around the dataplane. Run against iproute2 in a network namespace (host-real.test.ts) and the
 * in-memory fake (host-fake.test.ts).
 */
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import type { Host, HostAddress } from '../../src/host/host.js';
import type { Family } from '../../src/net/cidr.js';
import { testWith } from '../dataplane/namespaces.js';

/**
 * One machine, the same for the kernel (a namespace) and the model:
 *   lo     up, 127.0.0.1/8 and ::1/128        (the kernel's loopback addresses: scope host)
 *   priv0  up, MTU 1500, 192.168.1.1/24 and fd00::1/64
 *   kilo0  down, MTU 1500, no address
 * and IPv4 forwarding off.
 */
export interface HostHarness {
  host: Host;
  addAddress(device: string, cidr: string): Promise<void>;
  setMTU(device: string, mtu: number): Promise<void>;
  /** A default route via `gw` out of `device` (main table), as the machine's network set-up makes it. */
  addDefaultRoute(family: Family, gw: string, device: string, metric: number): Promise<void>;
  /** IPv4's forwarding switch, or IPv6's. */
  setForwarding(on: boolean, family?: 4 | 6): Promise<void>;
  destroy(): void;
}

/** Addresses as text; IPv6 link-local ones left out: the kernel makes them, the model does not. */
const shown = (addresses: HostAddress[]) =>
  addresses.filter((a) => !a.address.ip.text.startsWith('fe80:')).map((a) => `${a.iface} ${a.address.toString()}`);

export function hostContract(label: string, make: () => HostHarness, skip: string | false = false): void {
  describe(`Host contract: ${label}`, { skip }, () => {
    const withHost = testWith(make);

    withHost('addresses: every interface’s with its prefix, in order, but not the loopback ones', async (h) => {
      assert.deepEqual(shown(await h.host.addresses()), ['priv0 192.168.1.1/24', 'priv0 fd00::1/64']);
      await h.addAddress('kilo0', '10.4.0.1/16');
      await h.addAddress('priv0', '127.0.0.2/8');
      assert.deepEqual(shown(await h.host.addresses()), [
        'priv0 192.168.1.1/24',
        'priv0 fd00::1/64',
        'kilo0 10.4.0.1/16',
      ]);
    });

    withHost('addresses of one interface; none of an interface that does not exist', async (h) => {
      await h.addAddress('kilo0', '10.4.0.1/16');
      assert.deepEqual(shown(await h.host.addresses('kilo0')), ['kilo0 10.4.0.1/16']);
      assert.deepEqual(await h.host.addresses('nope0'), []);
    });

    withHost('link: up and MTU; null when there is no such interface; bringUp brings it up', async (h) => {
      assert.deepEqual(await h.host.link('priv0'), { up: true, mtu: 1500 });
      assert.deepEqual(await h.host.link('kilo0'), { up: false, mtu: 1500 });
      assert.equal(await h.host.link('nope0'), null);
      await h.host.bringUp('kilo0');
      assert.deepEqual(await h.host.link('kilo0'), { up: true, mtu: 1500 });
      await h.host.bringUp('kilo0');
      assert.deepEqual(await h.host.link('kilo0'), { up: true, mtu: 1500 }, 'up again is still up');
      await assert.rejects(h.host.bringUp('nope0'), /Cannot find device "nope0"/);
    });

    withHost('defaultRoute: IPv4’s, else IPv6’s, the lowest metric, with its interface’s MTU', async (h) => {
      assert.equal(await h.host.defaultRoute(), null, 'no default route');
      await h.setMTU('priv0', 1380);
      await h.addDefaultRoute(6, 'fd00::fe', 'priv0', 1024);
      assert.deepEqual(await h.host.defaultRoute(), { iface: 'priv0', mtu: 1380 });
      await h.addAddress('kilo0', '172.16.0.1/24');
      await h.host.bringUp('kilo0');
      await h.setMTU('kilo0', 1400);
      await h.addDefaultRoute(4, '172.16.0.254', 'kilo0', 200);
      assert.deepEqual(await h.host.defaultRoute(), { iface: 'kilo0', mtu: 1400 }, 'IPv4 first');
      await h.addDefaultRoute(4, '192.168.1.254', 'priv0', 100);
      assert.deepEqual(await h.host.defaultRoute(), { iface: 'priv0', mtu: 1380 }, 'the lowest metric');
    });

    withHost('IPv6 forwarding: its own sysctl, apart from IPv4’s', async (h) => {
      assert.equal(await h.host.ipv6Forwarding(), false);
      await h.setForwarding(true, 6);
      assert.equal(await h.host.ipv6Forwarding(), true);
      assert.equal(await h.host.ipv4Forwarding(), false, 'IPv4 stays off');
    });

    withHost('forwarding: the sysctl, and the kernel’s decision for a packet arriving on an interface', async (h) => {
      assert.equal(await h.host.ipv4Forwarding(), false);
      assert.equal(await h.host.wouldForward('172.16.5.5', '192.168.1.7', 'kilo0'), false, 'forwarding off');
      await h.setForwarding(true);
      assert.equal(await h.host.ipv4Forwarding(), true);
      assert.equal(await h.host.wouldForward('172.16.5.5', '192.168.1.7', 'kilo0'), true, 'on a connected prefix');
      assert.equal(await h.host.wouldForward('172.16.5.5', '203.0.113.9', 'kilo0'), false, 'no route');
      assert.equal(await h.host.wouldForward('172.16.5.5', '192.168.1.7', 'nope0'), false, 'no such interface');
      await h.addDefaultRoute(4, '192.168.1.254', 'priv0', 0);
      assert.equal(await h.host.wouldForward('172.16.5.5', '203.0.113.9', 'kilo0'), true, 'by the default route');
    });

    withHost('ping: the machine’s own address answers, an address nobody holds does not', async (h) => {
      assert.equal(await h.host.ping('192.168.1.1'), true);
      assert.equal(await h.host.ping('192.168.1.77'), false);
    });

    withHost('loadModule rejects a module that cannot be loaded, naming it', async (h) => {
      await assert.rejects(h.host.loadModule('kilo-no-such-module'), /kilo-no-such-module.*not found/);
    });
  });
}
