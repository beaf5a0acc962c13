/**
 * The dataplane's memory (dataplane/cache.ts) changes what a reconcile reads, never what the machine
 * ends up holding: the same plans, with the same faults made by hand, go through a reconcile that
 * trusts the last write (as the agent's cluster events do, told what the routing monitor would tell)
 * and one that reads every time, on two machines; after each step both hold the same state.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DataplaneMemory } from '../../src/dataplane/cache.js';
import { createFakeFirewall, type FakeNetfilter } from '../../src/dataplane/iptables/fake.js';
import { reconcile, type Dataplane } from '../../src/dataplane/reconcile.js';
import { FakeLinks, FakeKernel, fakeRoutingTables } from '../../src/dataplane/routes/fake.js';
import { FakeWireGuardDevice } from '../../src/dataplane/wireguard/fake.js';
import type { Plan } from '../../src/mesh/types.js';
import { generatePrivateKey } from '../../src/wireguard/keys.js';
import { planFor, twoLocations } from '../helpers/cluster.js';

interface Node {
  dp: Dataplane;
  kernel: FakeKernel;
  device: FakeWireGuardDevice;
  netfilter: FakeNetfilter;
}

function fakeNode(): Node {
  const kernel = new FakeKernel();
  kernel.addLink('kilo0', { mtu: 1420, up: false });
  kernel.addLink('eth0', { addresses: ['10.1.0.1/24'] });
  const device = new FakeWireGuardDevice('kilo0');
  const firewall = createFakeFirewall();
  const dp: Dataplane = {
    device,
    links: new FakeLinks(kernel),
    routes: fakeRoutingTables(kernel),
    firewall: firewall.tables,
  };
  return { dp, kernel, device, netfilter: firewall.netfilter };
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
  };
}

type Fault = (n: Node, memory: DataplaneMemory | null) => Promise<void> | void;

const privateKey = generatePrivateKey();
const objects = twoLocations();
const planA = planFor(objects, 'eu-a', { granularity: 'location', encapsulate: 'never' });
const planB = planFor(objects, 'eu-a', { granularity: 'full', encapsulate: 'never' });
const planC = planFor(objects.slice(0, 4), 'eu-a', { granularity: 'full', encapsulate: 'never' });

/** A route of Kilo's deleted by hand; the monitor reports it (the agent forgets what disagrees). */
const routeDeleted: Fault = (n, memory) => {
  const route = n.kernel.routes.find((r) => r.protocol === 107)!;
  n.kernel.routeDel(route);
  if (memory) assert.equal(memory.accounts({ deleted: true, route }), false, 'a deletion by hand is not ours');
};
/** A Kilo rule deleted from KILO-NAT by hand: no monitor tells; the agent's resync timer reads. */
const firewallRuleDeleted: Fault = (n, memory) => {
  n.netfilter.command(4, ['-t', 'nat', '-D', 'KILO-NAT', '1']);
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
  ['the interface deleted and recreated, then A', planA, interfaceRecreated],
  ['C', planC],
  ['A', planA],
];

test('the same plans and faults, trusting the last write and reading every time, leave the same machine', async () => {
  const cached = { node: fakeNode(), memory: new DataplaneMemory() };
  const plain = fakeNode();
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
