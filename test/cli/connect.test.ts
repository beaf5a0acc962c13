/**
 * kgctl connect against the test API server, over fake WireGuard/route/link pieces: the Peer it
 * registers, the mesh it configures, following changes, and what it removes on exit.
 */
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { FakeLinks, FakeKernel, fakeRoutingTables } from '../../src/dataplane/routes/fake.js';
import { FakeWireGuardDevice } from '../../src/dataplane/wireguard/fake.js';
import { defaultMeshOptions } from '../../src/mesh/options.js';
import { parseCluster } from '../../src/model/parse.js';
import { Cidr } from '../../src/net/cidr.js';
import { generatePrivateKey, publicKeyOf } from '../../src/wireguard/keys.js';
import { Connection, connectConfig, type ConnectOptions } from '../../src/cli/connect.js';
import { UsageError } from '../../src/model/errors.js';
import { TestApiServer, waitUntil } from '../fixtures/apiserver.js';
import { NOW, node, peer, wgKey } from '../helpers/cluster.js';
import { captureLogger, eventually, fastTimings } from '../agent/agent-harness.js';
import { kubeConfigFor } from '../../packages/lab/src/apiserver-kubeconfig.js';

function cluster(lastSeen: number) {
  return [
    node('a', {
      location: 'eu',
      endpoint: '198.51.100.1:51820',
      internalIP: '192.168.0.1/24',
      podCIDR: '10.42.0.0/24',
      wireGuardIP: '10.4.0.1/16',
      lastSeen,
    }),
    node('b', {
      location: 'eu',
      endpoint: '198.51.100.2:51820',
      internalIP: '192.168.0.2/24',
      podCIDR: '10.42.1.0/24',
      lastSeen,
    }),
    node('c', {
      location: 'us',
      endpoint: '203.0.113.3:51820',
      internalIP: '192.168.1.3/24',
      podCIDR: '10.42.2.0/24',
      wireGuardIP: '10.4.0.2/16',
      lastSeen,
    }),
    peer('laptop', { allowedIPs: ['10.5.0.1/32'] }),
  ];
}

describe('kgctl connect: the configuration', () => {
  test("every segment and the other Peers, the extra ranges on the first node's segment, a route per allowed IP", () => {
    const objects = [...cluster(NOW), peer('me', { allowedIPs: ['10.5.0.9/32'], keepalive: 10 })];
    const c = connectConfig(parseCluster(objects), 'me', defaultMeshOptions, [Cidr.parse('10.43.0.0/16')], NOW);
    assert.deepEqual(
      c.peers.map((p) => [
        p.kind,
        p.names.join(','),
        p.publicKey,
        p.endpoint,
        p.allowedIPs.join(' '),
        p.persistentKeepalive,
      ]),
      [
        [
          'segment',
          'a,b',
          wgKey('a'),
          '198.51.100.1:51820',
          '10.42.0.0/24 192.168.0.1/32 10.42.1.0/24 192.168.0.2/32 10.4.0.1/32 10.43.0.0/16',
          10,
        ],
        ['segment', 'c', wgKey('c'), '203.0.113.3:51820', '10.42.2.0/24 192.168.1.3/32 10.4.0.2/32', 10],
        ['peer', 'laptop', wgKey('laptop'), null, '10.5.0.1/32', 10],
      ],
    );
    const dsts = c.routes.map((r) => r.dst);
    assert.equal(new Set(dsts).size, dsts.length, 'a destination routed twice');
    assert.deepEqual(dsts.sort(), c.peers.flatMap((p) => p.allowedIPs).sort());
    assert.ok(c.routes.every((r) => r.dev === 'kilo' && r.table === 'main' && r.gw === null));
  });

  test('a Peer that is not in the cluster is an error naming it', () => {
    assert.throws(
      () => connectConfig(parseCluster(cluster(NOW)), 'ghost', defaultMeshOptions, [], NOW),
      /Peer "ghost" is not a ready Peer/,
    );
  });
});

interface Setup {
  api: TestApiServer;
  connection: Connection;
  device: FakeWireGuardDevice;
  kernel: FakeKernel;
  privateKey: string;
}

async function connect(
  t: TestContext,
  o: { cleanUp?: boolean; privateKey?: string; seed?: (api: TestApiServer) => void } = {},
): Promise<Setup> {
  const api = await TestApiServer.start({ bookmarkIntervalMs: 200 });
  t.after(() => api.close());
  // Judged against the wall clock (connect runs live): fresh last-seen.
  for (const obj of cluster(Math.floor(Date.now() / 1000))) {
    if (obj.kind === 'Node') api.addNode(obj);
    else api.addPeer(obj);
  }
  o.seed?.(api);
  const kernel = new FakeKernel();
  kernel.addLink('kilo0', { up: false });
  const device = new FakeWireGuardDevice('kilo0');
  const privateKey = o.privateKey ?? generatePrivateKey();
  const options: ConnectOptions = {
    name: 'me',
    allowedIP: Cidr.parse('10.5.0.9/32'),
    extraAllowedIPs: [Cidr.parse('10.43.0.0/16')],
    persistentKeepalive: 10,
    interfaceName: 'kilo0',
    mtu: 1420,
    resyncPeriodMs: 60_000,
    cleanUp: o.cleanUp ?? true,
    mesh: {
      meshGranularity: 'auto',
      subnet: Cidr.parse('10.4.0.0/16'),
      port: 51820,
      encapsulate: 'always',
      local: true,
      cni: true,
      iptablesForwardRules: false,
      serviceCidr: [],
      topologyLabel: 'topology.kubernetes.io/region',
    },
  };
  const connection = new Connection({
    kubeConfig: kubeConfigFor(api),
    dataplane: { device, links: new FakeLinks(kernel), routes: fakeRoutingTables(kernel) },
    privateKey,
    log: captureLogger(),
    options,
    timings: fastTimings,
  });
  t.after(() => connection.stop().catch(() => undefined));
  return { api, connection, device, kernel, privateKey };
}

describe('kgctl connect against the API server', () => {
  test('registers the Peer, configures the mesh, follows changes, and removes everything on exit', async (t) => {
    const s = await connect(t);
    await s.connection.start();
    assert.equal(s.connection.createdPeer, true);
    assert.deepEqual(s.api.peer('me')?.spec, {
      allowedIPs: ['10.5.0.9/32'],
      publicKey: publicKeyOf(s.privateKey),
      persistentKeepalive: 10,
    });
    const keys = async () => (await s.device.read()).peers.map((p) => p.publicKey).sort();
    await eventually('the mesh is configured', async () => (await keys()).length === 3);
    assert.deepEqual(await keys(), [wgKey('a'), wgKey('c'), wgKey('laptop')].sort());
    assert.equal((await s.device.read()).publicKey, publicKeyOf(s.privateKey));
    assert.deepEqual(s.kernel.link('kilo0').addresses, ['10.5.0.9/32']);
    assert.equal(s.kernel.link('kilo0').up, true);
    await waitUntil('the service CIDR is routed', () =>
      s.kernel.routes.some((r) => r.dst === '10.43.0.0/16' && r.dev === 'kilo0'),
    );

    s.api.addNode(
      node('d', {
        location: 'asia',
        endpoint: '203.0.113.4:51820',
        internalIP: '192.168.2.4/24',
        podCIDR: '10.42.3.0/24',
        lastSeen: Math.floor(Date.now() / 1000),
      }),
    );
    await eventually('the new location is a peer', async () => (await keys()).includes(wgKey('d')));
    await waitUntil('and routed', () => s.kernel.routes.some((r) => r.dst === '10.42.3.0/24'));

    await s.connection.stop();
    assert.equal(s.api.peer('me'), undefined, 'the registered Peer is still there');
    assert.deepEqual(
      s.kernel.routes.filter((r) => r.protocol === 107),
      [],
    );
    await assert.rejects(s.device.read(), /does not exist/);
  });

  test('--clean-up=false keeps the Peer; an existing Peer with this key is used and never removed', async (t) => {
    const s = await connect(t, { cleanUp: false });
    await s.connection.start();
    await s.connection.stop();
    assert.ok(s.api.peer('me'), 'the Peer went away with --clean-up=false');

    const privateKey = generatePrivateKey();
    const again = await connect(t, {
      privateKey,
      seed: (api) => api.addPeer(peer('me', { allowedIPs: ['10.5.0.9/32'], publicKey: publicKeyOf(privateKey) })),
    });
    await again.connection.start();
    assert.equal(again.connection.createdPeer, false);
    await again.connection.stop();
    assert.ok(again.api.peer('me'), 'a Peer connect did not create was removed');
  });

  test('an existing Peer with another key is refused, naming both keys', async (t) => {
    const s = await connect(t, { seed: (api) => api.addPeer(peer('me', { allowedIPs: ['10.5.0.9/32'] })) });
    await assert.rejects(
      s.connection.start(),
      (e: unknown) =>
        e instanceof UsageError && e.message.includes(wgKey('me')) && e.message.includes(publicKeyOf(s.privateKey)),
    );
    assert.equal(s.api.peer('me')?.spec?.['publicKey'], wgKey('me'), 'the other Peer was overwritten');
  });
});
