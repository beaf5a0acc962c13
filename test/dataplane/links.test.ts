import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { diffLink, LinuxLinks, type LinkState } from '../../src/dataplane/links.js';
import { FakeLinks, FakeKernel, fakeRoutingTables, settle } from '../../src/dataplane/routes/fake.js';
import { linuxRoutingTables } from '../../src/dataplane/routes/linux.js';
import type { KiloRoutingTables } from '../../src/dataplane/routes/reconciler.js';
import type { Links } from '../../src/dataplane/types.js';
import { skipNoNetns } from '../helpers/netns.js';
import { linksNamespace, testWith } from './namespaces.js';
import { ipExec } from './routes-exec.js';

/** kilo0 exists, down, MTU 1500, no address; priv0 is up with 192.168.1.1/24. */
interface LinksHarness {
  links: Links & { read(device: string): Promise<LinkState> };
  routes: KiloRoutingTables;
  addAddress(device: string, cidr: string): Promise<void>;
  destroy(): void;
}

const devices = { kilo: 'kilo0', private: 'priv0', tunnel: null };

function linksContract(label: string, make: () => LinksHarness, skip: string | false = false): void {
  describe(`Links contract: ${label}`, { skip }, () => {
    const withLinks = testWith(make);

    withLinks('sets address, MTU and up in one go; the same state again writes nothing', async (h) => {
      const ops = await h.links.reconcile('kilo0', { address: '10.4.0.1/16', up: true, mtu: 1420 });
      assert.deepEqual(ops.details, [
        'link set dev kilo0 mtu 1420',
        'address add 10.4.0.1/16 dev kilo0',
        'link set dev kilo0 up',
      ]);
      assert.deepEqual(await h.links.read('kilo0'), { up: true, mtu: 1420, addresses: ['10.4.0.1/16'] });
      assert.deepEqual(await h.links.reconcile('kilo0', { address: '10.4.0.1/16', up: true, mtu: 1420 }), {
        writes: 0,
        details: [],
      });
      // A null MTU leaves the MTU alone.
      assert.equal((await h.links.reconcile('kilo0', { address: '10.4.0.1/16', up: true, mtu: null })).writes, 0);
    });

    withLinks('the address becomes the only one: others go, a changed prefix is replaced', async (h) => {
      await h.addAddress('kilo0', '10.9.9.9/24');
      await h.addAddress('kilo0', 'fd09::9/64');
      const ops = await h.links.reconcile('kilo0', { address: '10.4.0.1/16', up: false, mtu: null });
      assert.deepEqual([...ops.details].sort(), [
        'address add 10.4.0.1/16 dev kilo0',
        'address del 10.9.9.9/24 dev kilo0',
        'address del fd09::9/64 dev kilo0',
      ]);
      const changed = await h.links.reconcile('kilo0', { address: '10.4.0.2/24', up: false, mtu: null });
      assert.deepEqual(changed.details, ['address del 10.4.0.1/16 dev kilo0', 'address add 10.4.0.2/24 dev kilo0']);
      assert.deepEqual((await h.links.read('kilo0')).addresses, ['10.4.0.2/24']);
    });

    withLinks('no address and down: a non-leader’s interface is emptied and brought down', async (h) => {
      await h.links.reconcile('kilo0', { address: '10.4.0.1/16', up: true, mtu: 1420 });
      const ops = await h.links.reconcile('kilo0', { address: null, up: false, mtu: 1420 });
      assert.deepEqual(ops.details, ['link set dev kilo0 down', 'address del 10.4.0.1/16 dev kilo0']);
      assert.deepEqual(await h.links.read('kilo0'), { up: false, mtu: 1420, addresses: [] });
    });

    withLinks('bringing the interface down drops the routes through it, as the kernel does', async (h) => {
      await h.links.reconcile('kilo0', { address: '10.4.0.1/16', up: true, mtu: null });
      const route = {
        dst: '10.42.2.0/24',
        gw: '10.4.0.2',
        dev: 'kilo' as const,
        src: null,
        table: 'main' as const,
        onlink: true,
      };
      await h.routes.reconcile([route], [], devices);
      assert.equal((await h.routes.read()).routes.length, 1);
      await h.links.reconcile('kilo0', { address: '10.4.0.1/16', up: false, mtu: null });
      assert.deepEqual((await h.routes.read()).routes, []);
      // Down, the route cannot come back; the error names it.
      await assert.rejects(
        h.routes.reconcile([route], [], devices),
        /route 10\.42\.2\.0\/24 via 10\.4\.0\.2 dev kilo0 onlink: Nexthop device is not up/,
      );
    });

    withLinks('errors name the interface, field and value', async (h) => {
      await assert.rejects(
        h.links.reconcile('nope0', { address: null, up: true, mtu: null }),
        /interface nope0 does not exist/,
      );
      await assert.rejects(
        h.links.reconcile('kilo0', { address: null, up: true, mtu: 10 }),
        /interface kilo0: MTU 10 is not/,
      );
      await assert.rejects(
        h.links.reconcile('kilo0', { address: '10.4.0.1', up: true, mtu: null }),
        /interface address "10\.4\.0\.1"/,
      );
      assert.deepEqual(await h.links.read('kilo0'), { up: false, mtu: 1500, addresses: [] }, 'nothing was written');
    });
  });
}

linksContract('in-memory model', () => {
  const m = new FakeKernel();
  m.addLink('priv0', { addresses: ['192.168.1.1/24'] });
  m.addLink('kilo0', { up: false });
  return {
    links: new FakeLinks(m),
    routes: fakeRoutingTables(m),
    addAddress: (d, c) => settle(() => m.addAddress(d, c)),
    destroy: () => {},
  };
});

linksContract(
  'iproute2 in a network namespace',
  () => {
    const ns = linksNamespace('ktln');
    const exec = ipExec(ns);
    return {
      links: new LinuxLinks(exec),
      routes: linuxRoutingTables(exec),
      addAddress: async (d, c) => void (await exec.run(['ip', 'addr', 'add', c, 'dev', d, 'nodad'])),
      destroy: () => ns.destroy(),
    };
  },
  skipNoNetns,
);

describe('diffLink', () => {
  const base: LinkState = { up: true, mtu: 1420, addresses: ['10.4.0.1/16'] };
  test('equal state needs nothing; host bits and IPv6 spelling are compared canonically', () => {
    assert.deepEqual(diffLink(base, { address: '10.4.0.1/16', up: true, mtu: 1420 }), []);
    assert.deepEqual(
      diffLink({ ...base, addresses: ['fd04::1/64'] }, { address: 'fd04:0:0::1/64', up: true, mtu: null }),
      [],
    );
  });
  test('down first and up last, so the interface never runs with old settings', () => {
    const up = diffLink({ up: false, mtu: 1500, addresses: [] }, { address: '10.4.0.1/16', up: true, mtu: 1420 });
    assert.equal(up.at(-1)?.kind, 'up');
    const down = diffLink(base, { address: null, up: false, mtu: 1300 });
    assert.equal(down[0]?.kind, 'down');
  });
});
