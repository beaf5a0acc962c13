/**
 * The dataplane's memory (dataplane/cache.ts) changes what a reconcile reads, never what the machine
 * ends up holding: the same plans, with the same faults made by hand, go through a reconcile that
 * trusts the last write (as the agent's cluster events do, told what the routing monitor would tell)
 * and one that reads every time, on two machines; after each step both hold the same state. Both
 * firewall backends: iptables, and nftables (its table and what it keeps in iptables).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DataplaneMemory } from '../../src/dataplane/cache.js';
import { createFakeFirewall, type FakeNetfilter } from '../../src/dataplane/iptables/fake.js';
import { createFakeNftables, type FakeNftables } from '../../src/dataplane/nftables/fake.js';
import { reconcile, type Dataplane } from '../../src/dataplane/reconcile.js';
import { FakeLinks, FakeKernel, fakeRoutingTables } from '../../src/dataplane/routes/fake.js';
import type { KiloRoutingTables } from '../../src/dataplane/routes/reconciler.js';
import { ReadAhead } from '../../src/dataplane/read-ahead.js';
import { FakeWireGuardDevice } from '../../src/dataplane/wireguard/fake.js';
import type { Plan } from '../../src/mesh/types.js';
import { generatePrivateKey } from '../../src/wireguard/keys.js';
import { planFor, twoLocations } from '../helpers/cluster.js';

interface Node {
  dp: Dataplane;
  kernel: FakeKernel;
  device: FakeWireGuardDevice;
  netfilter: FakeNetfilter;
  /** The nftables backend's machine; null: the iptables backend. */
  nft: FakeNftables | null;
}

type Backend = 'iptables' | 'nftables';
const backends: Backend[] = ['iptables', 'nftables'];

function fakeNode(backend: Backend = 'iptables'): Node {
  const kernel = new FakeKernel();
  kernel.addLink('kilo0', { mtu: 1420, up: false });
  kernel.addLink('eth0', { addresses: ['10.1.0.1/24'] });
  const device = new FakeWireGuardDevice('kilo0');
  const firewall =
    backend === 'nftables' ? createFakeNftables() : { ...createFakeFirewall(), nft: null, iptables: null };
  const dp: Dataplane = {
    device,
    links: new FakeLinks(kernel),
    routes: fakeRoutingTables(kernel),
    firewall: firewall.tables,
  };
  return { dp, kernel, device, netfilter: firewall.iptables ?? firewall.netfilter, nft: firewall.nft };
}

/** Kilo's nftables table without its handles (they count every write, not what is there); null: none. */
function kiloTable(nft: FakeNftables): unknown {
  try {
    return JSON.parse(nft.list('inet', 'kilo'), (k, v: unknown) => (k === 'handle' ? undefined : v));
  } catch {
    return null;
  }
}

/** Everything a reconcile may change, in one comparable value (peers without their sessions). */
async function stateOf(n: Node): Promise<unknown> {
  const wg = await n.device.read().catch(() => null);
  return {
    routes: n.kernel.routes.map((r) => JSON.stringify(r)).sort(),
    rules: n.kernel.rules.map((r) => JSON.stringify(r)).sort(),
    kilo0: n.kernel.links.get('kilo0') ?? null,
    wireGuard: wg && {
      publicKey: wg.publicKey,
      fwmark: wg.fwmark,
      peers: wg.peers.map((p) => ({ ...p, latestHandshake: 0, rxBytes: 0, txBytes: 0 })),
    },
    firewall: ([4, 6] as const).flatMap((f) => ['nat', 'filter'].map((t) => n.netfilter.save(f, t))),
    nftables: n.nft && kiloTable(n.nft),
  };
}

type Fault = (n: Node, memory: DataplaneMemory | null) => Promise<void> | void;

const privateKey = generatePrivateKey();
const objects = twoLocations();
const planA = planFor(objects, 'eu-a', { granularity: 'location', encapsulate: 'never' });
const planB = planFor(objects, 'eu-a', { granularity: 'full', encapsulate: 'never', iptablesForwardRules: true });
const planC = planFor(objects.slice(0, 4), 'eu-a', { granularity: 'full', encapsulate: 'never' });

/** A route of Kilo's deleted by hand; the monitor reports it (the agent forgets what disagrees). */
const routeDeleted: Fault = (n, memory) => {
  const route = n.kernel.routes.find((r) => r.protocol === 107)!;
  n.kernel.routeDel(route);
  if (memory) assert.equal(memory.accounts({ deleted: true, route }), false, 'a deletion by hand is not ours');
};
/** A Kilo rule deleted by hand (KILO-NAT's first, or the table's): no monitor tells; the agent's resync timer reads. */
const firewallRuleDeleted: Fault = (n, memory) => {
  if (n.nft) {
    const [rule] = n.nft.handles('inet', 'kilo', 'kilo-nat');
    assert.ok(rule, 'a rule of Kilo to delete');
    n.nft.script(`delete rule inet kilo kilo-nat handle ${rule.handle}\n`);
  } else n.netfilter.command(4, ['-t', 'nat', '-D', 'KILO-NAT', '1']);
  memory?.forget();
};
/** iptables' FORWARD policy set to DROP (Docker starts) or back to ACCEPT: found by the next resync. */
const forwardPolicy =
  (policy: 'DROP' | 'ACCEPT'): Fault =>
  (n, memory) => {
    n.netfilter.command(4, ['-t', 'filter', '-P', 'FORWARD', policy]);
    memory?.forget();
  };
/** A WireGuard peer removed by hand (wg set … remove): found by the next resync. */
const peerRemoved: Fault = async (n, memory) => {
  const [first] = (await n.device.read()).peers;
  const current = await n.device.read();
  // The fake is written the way `wg set` is: a diff to a config without that peer.
  await n.device.configure({
    privateKey,
    listenPort: current.listenPort,
    fwmark: current.fwmark,
    peers: planA.peers.filter((p) => p.publicKey !== first!.publicKey),
  });
  memory?.forget();
};
/** The WireGuard interface deleted and created again, empty and down: the monitor reports the link. */
const interfaceRecreated: Fault = async (n, memory) => {
  await n.device.destroy();
  n.kernel.deleteLink('kilo0');
  n.kernel.addLink('kilo0', { mtu: 1500, up: false });
  memory?.forget();
};

const steps: [string, Plan, Fault?][] = [
  ['A on an empty machine', planA],
  ['B (a cluster event)', planB],
  ['B again', planB],
  ['A', planA],
  ['a route deleted by hand, then A', planA, routeDeleted],
  ['C', planC],
  ['a firewall rule deleted by hand, then C at the resync', planC, firewallRuleDeleted],
  ['B', planB],
  ['a peer removed by hand, then A at the resync', planA, peerRemoved],
  ["iptables' FORWARD policy DROP, then B at the resync", planB, forwardPolicy('DROP')],
  ['C', planC],
  ["iptables' FORWARD policy back to ACCEPT, then A at the resync", planA, forwardPolicy('ACCEPT')],
  ['the interface deleted and recreated, then A', planA, interfaceRecreated],
  ['C', planC],
  ['A', planA],
];

for (const backend of backends)
  test(`${backend}: the same plans and faults, trusting the last write and reading every time, leave the same machine`, async () => {
    const cached = { node: fakeNode(backend), memory: new DataplaneMemory() };
    const plain = fakeNode(backend);
    const devices = { kilo: 'kilo0', private: 'eth0', tunnel: null };
    for (const [name, plan, fault] of steps) {
      await fault?.(cached.node, cached.memory);
      await fault?.(plain, null);
      const input = { plan, privateKey, mtu: 1420, devices };
      const trusted = await reconcile(cached.node.dp, input, { memory: cached.memory });
      const read = await reconcile(plain.dp, input);
      assert.deepEqual(trusted.errors, [], `${name}: ${trusted.errors.join('; ')}`);
      assert.deepEqual(read.errors, [], `${name}: ${read.errors.join('; ')}`);
      assert.deepEqual(await stateOf(cached.node), await stateOf(plain), name);
      assert.equal(trusted.writes, read.writes, `${name}: the same writes`);
      // The echo of our own write is ours.
      const mine = cached.node.kernel.routes.find((r) => r.protocol === 107);
      if (mine) assert.equal(cached.memory.accounts({ deleted: false, route: mine }), true, name);
    }
  });

test('without telling the memory, a fault by hand is not repaired by a trusting pass (the test can fail)', async () => {
  const cached = { node: fakeNode(), memory: new DataplaneMemory() };
  const input = { plan: planA, privateKey, mtu: 1420, devices: { kilo: 'kilo0', private: 'eth0', tunnel: null } };
  await reconcile(cached.node.dp, input, { memory: cached.memory });
  const before = await stateOf(cached.node);
  cached.node.netfilter.command(4, ['-t', 'nat', '-D', 'KILO-NAT', '1']);
  await reconcile(cached.node.dp, input, { memory: cached.memory });
  assert.notDeepEqual(await stateOf(cached.node), before, 'trusted: the deleted rule stays deleted');
  cached.memory.forget();
  await reconcile(cached.node.dp, input, { memory: cached.memory });
  assert.deepEqual(await stateOf(cached.node), before, 'after forget(): read and repaired');
});

for (const backend of backends)
  test(`${backend}: the same plans and faults, each pass reading ahead (kg apply) and reading in its steps, leave the same machine`, async () => {
    const ahead = fakeNode(backend);
    const plain = fakeNode(backend);
    const devices = { kilo: 'kilo0', private: 'eth0', tunnel: null };
    for (const [name, plan, fault] of steps) {
      await fault?.(ahead, null);
      await fault?.(plain, null);
      const input = { plan, privateKey, mtu: 1420, devices };
      const layer = new ReadAhead(ahead.dp, 'kilo0');
      layer.start();
      void layer.ensure();
      const early = await reconcile(ahead.dp, input, { once: true, ahead: layer });
      const read = await reconcile(plain.dp, input, { once: true });
      assert.deepEqual(early.errors, [], `${name}: ${early.errors.join('; ')}`);
      assert.deepEqual(await stateOf(ahead), await stateOf(plain), name);
      assert.equal(early.writes, read.writes, `${name}: the same writes`);
    }
  });

test('a first apply read ahead diffs its routes against the empty read it took, not a second read (974d355)', async () => {
  const n = fakeNode();
  const routes = n.dp.routes as KiloRoutingTables;
  let reads = 0;
  const readUnparsed = routes.readUnparsed.bind(routes);
  routes.readUnparsed = () => (reads++, readUnparsed());
  const kernelRead = (routes as unknown as { kernel: { read: (...a: unknown[]) => unknown } }).kernel;
  const inner = kernelRead.read.bind(kernelRead);
  let kernelReads = 0;
  kernelRead.read = (...a: unknown[]) => (kernelReads++, inner(...a));
  const layer = new ReadAhead(n.dp, 'kilo0');
  layer.start();
  assert.equal(await layer.ensure(), true, 'the interface is created ahead');
  const input = { plan: planA, privateKey, mtu: 1420, devices: { kilo: 'kilo0', private: 'eth0', tunnel: null } };
  const result = await reconcile(n.dp, input, { once: true, ahead: layer });
  assert.deepEqual(result.errors, []);
  assert.ok(result.routes.writes > 0);
  assert.equal(reads, 1, 'the routes were read once, ahead');
  assert.equal(kernelReads, 1, 'and not again by the routes step');
});

test('a read ahead is taken by one reconcile only: a later pass reads, and the jumps are inserted once (55b618b)', async () => {
  const n = fakeNode();
  const plain = fakeNode();
  const input = { plan: planA, privateKey, mtu: 1420, devices: { kilo: 'kilo0', private: 'eth0', tunnel: null } };
  const layer = new ReadAhead(n.dp, 'kilo0');
  layer.start();
  // The reconcile begins before the interface is created ahead (a small plan made quickly).
  const first = reconcile(n.dp, input, { once: true, ahead: layer });
  void layer.ensure();
  assert.deepEqual((await first).errors, []);
  const taken = layer.take();
  assert.equal(await taken.firewall, undefined, 'nothing is left for a later pass');
  assert.equal(await taken.routes, undefined);
  // The next pass (--watch) reads: a firewall read of before the first pass would insert the jumps again.
  await reconcile(n.dp, input, { once: true, ahead: layer });
  await reconcile(plain.dp, input, { once: true });
  await reconcile(plain.dp, input, { once: true });
  assert.deepEqual(await stateOf(n), await stateOf(plain));
});
