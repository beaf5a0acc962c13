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
import { inputOf, patchedSteps, planA, privateKey, runSteps, type Faults, type Side } from './equivalence-steps.js';

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

const faults: Faults<Node> = {
  routeDeleted: (n, memory) => {
    const route = n.kernel.routes.find((r) => r.protocol === 107)!;
    n.kernel.routeDel(route);
    if (memory) assert.equal(memory.accounts({ deleted: true, route }), false, 'a deletion by hand is not ours');
  },
  guardDeleted: (n, memory) => {
    const route = n.kernel.routes.find((r) => r.protocol === 107 && r.type === 'blackhole');
    assert.ok(route, 'the plan wrote the guard');
    n.kernel.routeDel(route);
    if (memory) assert.equal(memory.accounts({ deleted: true, route }), false, 'a deletion by hand is not ours');
  },
  firewallRuleDeleted: (n, memory) => {
    if (n.nft) {
      const [rule] = n.nft.handles('inet', 'kilo', 'kilo-nat');
      assert.ok(rule, 'a rule of Kilo to delete');
      n.nft.script(`delete rule inet kilo kilo-nat handle ${rule.handle}\n`);
    } else n.netfilter.command(4, ['-t', 'nat', '-D', 'KILO-NAT', '1']);
    memory?.forget();
  },
  forwardPolicy: (n, policy, memory) => {
    n.netfilter.command(4, ['-t', 'filter', '-P', 'FORWARD', policy]);
    memory?.forget();
  },
  peerRemoved: async (n, memory) => {
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
  },
  /** Deleted and created again, empty and down: the monitor reports the link. */
  interfaceDeleted: async (n, memory) => {
    await n.device.destroy();
    n.kernel.deleteLink('kilo0');
    n.kernel.addLink('kilo0', { mtu: 1500, up: false });
    memory?.forget();
  },
};

/** A machine each pass of which reads in its steps (with `once`, as kg apply's passes are). */
const readingEveryTime = (n: Node, once = false): Side<Node> => ({
  node: n,
  pass: (input) => reconcile(n.dp, input, once ? { once } : {}),
});

for (const backend of backends)
  test(`${backend}: the same plans and faults, trusting the last write and reading every time, leave the same machine`, async () => {
    const memory = new DataplaneMemory();
    const cached = fakeNode(backend);
    await runSteps(
      faults,
      stateOf,
      {
        node: cached,
        memory,
        pass: async (input, step) => {
          const trusted = await reconcile(cached.dp, input, { memory });
          // The echo of our own write is ours.
          const mine = cached.kernel.routes.find((r) => r.protocol === 107);
          if (mine) assert.equal(memory.accounts({ deleted: false, route: mine }), true, step.name);
          return trusted;
        },
      },
      readingEveryTime(fakeNode(backend)),
    );
    // The cluster events' passes patched the last WireGuard write (dataplane/wireguard/incremental.ts).
    assert.ok(cached.device.differ.patches >= patchedSteps, `${cached.device.differ.patches} patched WireGuard diffs`);
  });

test('without telling the memory, a fault by hand is not repaired by a trusting pass (the test can fail)', async () => {
  const cached = { node: fakeNode(), memory: new DataplaneMemory() };
  const input = inputOf(planA);
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
    await runSteps(
      faults,
      stateOf,
      {
        node: ahead,
        pass: async (input) => {
          const layer = new ReadAhead(ahead.dp, 'kilo0');
          layer.start();
          void layer.ensure();
          return reconcile(ahead.dp, input, { once: true, ahead: layer });
        },
      },
      readingEveryTime(fakeNode(backend), true),
    );
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
  const input = inputOf(planA);
  const result = await reconcile(n.dp, input, { once: true, ahead: layer });
  assert.deepEqual(result.errors, []);
  assert.ok(result.routes.writes > 0);
  assert.equal(reads, 1, 'the routes were read once, ahead');
  assert.equal(kernelReads, 1, 'and not again by the routes step');
});

test('a read ahead is taken by one reconcile only: a later pass reads, and the jumps are inserted once (55b618b)', async () => {
  const n = fakeNode();
  const plain = fakeNode();
  const input = inputOf(planA);
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

test("a pass whose ensure creates the interface configures it whole, not against the pass's earlier read", async () => {
  const n = fakeNode();
  const memory = new DataplaneMemory();
  const input = inputOf(planA);
  assert.deepEqual((await reconcile(n.dp, input, { memory })).errors, []);
  // The agent's full pass: it forgets, reads the device for its configure to diff against…
  memory.forget();
  memory.deviceRead(await n.device.dump());
  // …and wireguard-go goes before the pass's ensure, which starts an empty one.
  await n.device.destroy();
  const result = await reconcile(n.dp, input, { memory });
  assert.deepEqual(result.errors, []);
  assert.equal(result.wireGuard.added.length, planA.peers.length, 'every peer written to the new interface');
  assert.equal((await n.device.read()).peers.length, planA.peers.length);
});
