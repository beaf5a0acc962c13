import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { diffLink, LinuxLinks, type LinkState } from '../../src/dataplane/links.js';
import { FakeKernel, FakeLinks, FakeRoutes, settle } from '../../src/dataplane/routes/fake.js';
import { IprouteRoutes } from '../../src/dataplane/routes/linux.js';
import { KiloRoutingTables } from '../../src/dataplane/routes/reconciler.js';
import { describeRoute, describeRule } from '../../src/dataplane/routes/state.js';
import type { Links } from '../../src/dataplane/types.js';
import { kiloTable, type PlanRoute, type PlanRule } from '../../src/mesh/types.js';
import { skipNoNetns } from '../helpers/netns.js';
import { linksNamespace, testWith } from './namespaces.js';
import { ipExec } from './routes-exec.js';

/** kilo0 exists, down, MTU 1500, no address; priv0 is up with 192.168.1.1/24 and fd00::1/64. */
interface LinksHarness {
  links: Links & { read(device: string): Promise<LinkState> };
  routes: KiloRoutingTables;
  /** Whether the routes' writer puts IPv4 routes with a gateway on next-hop objects (routes/nexthops.ts). */
  nexthops: boolean;
  /** Kilo's next-hop objects, as `gateway device[ onlink]`, sorted. */
  hops(): Promise<string[]>;
  /** As an admin would (`ip addr add|del`, `ip link set`), beside Links. */
  addAddress(device: string, cidr: string): Promise<void>;
  delAddress(device: string, cidr: string): Promise<void>;
  setUp(device: string, up: boolean): Promise<void>;
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

    // The kernel takes these routes away without telling a routing monitor of the IPv4 ones (44004a0).
    const route = (dst: string, gw: string | null, extra: Partial<PlanRoute> = {}): PlanRoute => ({
      ...{ dst, gw, dev: 'kilo', src: null, table: 'main', onlink: false },
      ...extra,
    });
    const throughKilo = [
      route('10.42.1.0/24', null),
      route('10.42.2.0/24', '10.4.0.2'),
      route('10.42.3.0/24', '10.9.0.2', { onlink: true, table: kiloTable }),
      route('10.42.4.0/24', '10.4.0.2', { onlink: true, src: '192.168.1.1' }),
      route('10.42.5.0/24', '10.4.0.2', { onlink: true, src: '192.168.1.1', table: kiloTable }),
      route('10.42.6.0/24', 'fd10::2', { table: kiloTable }),
      route('fd42:1::/64', null),
      route('fd42:2::/64', 'fd10::2', { table: kiloTable }),
      route('fd42:3::/64', 'fd99::2', { onlink: true }),
      route('fd42:4::/64', 'fd10::2', { src: 'fd00::1' }),
    ];
    const kiloRules: PlanRule[] = [
      { src: '10.42.1.0/24', dst: null, iif: 'kilo', table: kiloTable },
      { src: 'fd42:1::/64', dst: null, iif: null, table: kiloTable },
    ];
    const state = async (h: LinksHarness) => {
      const s = await h.routes.read();
      return { routes: s.routes.map(describeRoute).sort(), rules: s.rules.map(describeRule).sort() };
    };
    const kiloHolds = async (h: LinksHarness, addresses: string[]) => {
      await h.links.reconcile('kilo0', { address: addresses[0]!, up: true, mtu: null });
      for (const a of addresses.slice(1)) await h.addAddress('kilo0', a);
      const ops = await h.routes.reconcile(throughKilo, kiloRules, devices);
      assert.equal(ops.writes, throughKilo.length + kiloRules.length, ops.details.join('\n'));
      // One per gateway, device and onlink flag of the IPv4 routes; IPv6 routes are written plain.
      const hops = ['10.4.0.2 kilo0', '10.4.0.2 kilo0 onlink', '10.9.0.2 kilo0 onlink', 'fd10::2 kilo0'];
      assert.deepEqual(await h.hops(), h.nexthops ? hops : []);
    };
    const ipv4 = (x: string) => !x.includes(':') || x.includes(' via inet6 ');

    withLinks(
      'an address taken away: only the last IPv4 one drops the IPv4 routes through the interface',
      async (h) => {
        await kiloHolds(h, ['10.4.0.1/16', '10.6.0.1/16', 'fd10::1/64', 'fd11::1/64']);
        const all = await state(h);
        // One of two IPv4 addresses, even the one the gateways are on; one of two IPv6 ones: nothing.
        await h.delAddress('kilo0', '10.4.0.1/16');
        await h.delAddress('kilo0', 'fd11::1/64');
        assert.deepEqual(await state(h), all);
        // The last IPv4 one: every plain IPv4 route through the interface, in every table, onlink or
        // not; a route through a next-hop object stays, and so does the object (only its interface
        // going takes it), gateways no longer on a connected network or not.
        const hops = await h.hops();
        await h.delAddress('kilo0', '10.6.0.1/16');
        const dropped = all.routes.filter((x) => ipv4(x) && !(h.nexthops && x.includes(' via ')));
        assert.deepEqual(
          dropped,
          h.nexthops ? ['route 10.42.1.0/24 dev kilo0'] : all.routes.filter(ipv4),
          'the routes the kernel drops',
        );
        const left = all.routes.filter((x) => !dropped.includes(x));
        assert.deepEqual(await state(h), { routes: left, rules: all.rules });
        assert.deepEqual(await h.hops(), hops);
        // Given again (another subnet, as a changed --subnet does), the routes do not come back by themselves.
        await h.addAddress('kilo0', '10.4.0.1/24');
        assert.deepEqual(await state(h), { routes: left, rules: all.rules });
        assert.equal((await h.routes.reconcile(throughKilo, kiloRules, devices)).writes, dropped.length);
        assert.deepEqual(await state(h), all);
        assert.deepEqual(await h.hops(), hops);
        // The last IPv6 one: the IPv6 routes stay, their gateways no longer on a connected network or not.
        await h.delAddress('kilo0', 'fd10::1/64');
        assert.deepEqual(await state(h), all);
      },
    );

    withLinks(
      'a source address no interface holds any more: IPv4 routes in main go, IPv6 routes lose it',
      async (h) => {
        await kiloHolds(h, ['10.4.0.1/16', 'fd10::1/64']);
        const all = await state(h);
        const hops = await h.hops();
        await h.delAddress('priv0', '192.168.1.1/24');
        await h.delAddress('priv0', 'fd00::1/64');
        assert.deepEqual(await state(h), {
          routes: all.routes
            .filter((x) => !x.startsWith('route 10.42.4.0/24'))
            .map((x) => x.replace('fd42:4::/64 via fd10::2 dev kilo0 src fd00::1', 'fd42:4::/64 via fd10::2 dev kilo0'))
            .sort(),
          rules: all.rules,
        });
        // Through a next-hop object or not, an IPv4 route of the main table goes with its source
        // (and an IPv6 route, written plain, loses it): none is left with a source no interface holds.
        assert.deepEqual(await h.hops(), hops);
      },
    );

    withLinks('down: every route through the interface and its IPv6 addresses go; rules stay', async (h) => {
      await kiloHolds(h, ['10.4.0.1/16', 'fd10::1/64']);
      const { rules } = await state(h);
      await h.setUp('kilo0', false);
      assert.deepEqual(await state(h), { routes: [], rules });
      assert.deepEqual(await h.hops(), [], 'the next-hop objects go with the interface');
      assert.deepEqual(await h.links.read('kilo0'), { up: false, mtu: 1500, addresses: ['10.4.0.1/16'] });
      await h.setUp('kilo0', true);
      assert.deepEqual(await state(h), { routes: [], rules });
      assert.deepEqual((await h.links.read('kilo0')).addresses, ['10.4.0.1/16']);
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

const inMemory =
  (nexthops: boolean): (() => LinksHarness) =>
  () => {
    const m = new FakeKernel();
    m.addLink('priv0', { addresses: ['192.168.1.1/24', 'fd00::1/64'] });
    m.addLink('kilo0', { up: false });
    return {
      links: new FakeLinks(m),
      routes: new KiloRoutingTables(new FakeRoutes(m, nexthops)),
      nexthops,
      hops: () => settle(() => [...m.nexthopObjects].sort()),
      addAddress: (d, c) => settle(() => m.addAddress(d, c)),
      delAddress: (d, c) => settle(() => m.delAddress(d, c)),
      setUp: (d, up) => settle(() => m.setUp(d, up)),
      destroy: () => {},
    };
  };

const inNamespace =
  (nexthops: boolean): (() => LinksHarness) =>
  () => {
    const ns = linksNamespace('ktln');
    const exec = ipExec(ns);
    return {
      links: new LinuxLinks(exec),
      routes: new KiloRoutingTables(new IprouteRoutes(exec, undefined, undefined, nexthops)),
      nexthops,
      hops: async () =>
        (
          JSON.parse((await exec.run(['ip', '-j', 'nexthop', 'show'])).stdout || '[]') as {
            gateway: string;
            dev: string;
            protocol?: string;
            flags?: string[];
          }[]
        )
          .filter((x) => x.protocol === '107')
          .map((x) => `${x.gateway} ${x.dev}${x.flags?.includes('onlink') ? ' onlink' : ''}`)
          .sort(),
      addAddress: async (d, c) => void (await exec.run(['ip', 'addr', 'add', c, 'dev', d, 'nodad'])),
      delAddress: async (d, c) => void (await exec.run(['ip', 'addr', 'del', c, 'dev', d])),
      setUp: async (d, up) => void (await exec.run(['ip', 'link', 'set', 'dev', d, up ? 'up' : 'down'])),
      destroy: () => ns.destroy(),
    };
  };

// As kg writes routes (IPv4 ones with a gateway through next-hop objects), and plain, as on a
// kernel without next-hop objects: the model must drop what the kernel drops in both.
linksContract('in-memory model', inMemory(true));
linksContract('in-memory model, plain routes', inMemory(false));
linksContract('iproute2 in a network namespace', inNamespace(true), skipNoNetns);
linksContract('iproute2 in a network namespace, plain routes', inNamespace(false), skipNoNetns);

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
