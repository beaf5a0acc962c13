/**
 * The real `kg` binary in a network namespace with wireguard-go, against the test API server in
 * this process (agent-namespace.ts: a veth pair joins the namespace to the host, the API server
 * listens on the host end, kg reaches it from the namespace end, which is also its internal IP and
 * endpoint). What the cluster says must reach the machine (`wg show`, `ip route`), survive an API
 * server outage, and be removed on SIGTERM.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Annotation } from '../../src/model/annotations.js';
import { node, peer, wgKey } from '../helpers/cluster.js';
import { skipNoNetns, type TestNamespace } from '../helpers/netns.js';
import { agentNamespace } from './agent-namespace.js';

const nowSeconds = () => Math.floor(Date.now() / 1000);

async function eventually(what: string, f: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let ok = false;
    try {
      ok = f();
    } catch {
      ok = false;
    }
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await sleep(200);
  }
}

/** `wg show kilo0 dump` peers: public key → allowed IPs. */
function wgPeers(ns: TestNamespace): Map<string, string> {
  const lines = ns.sh('wg show kilo0 dump').trim().split('\n').slice(1);
  return new Map(
    lines
      .filter(Boolean)
      .map((l) => l.split('\t'))
      .map((f) => [f[0]!, f[3]!]),
  );
}

const kiloRoutes = (ns: TestNamespace) => ns.sh('ip route show proto 107; ip route show table all proto 107').trim();

test(
  'kg in a namespace: cluster changes reach the machine, an API outage changes nothing, SIGTERM cleans up',
  { skip: skipNoNetns, timeout: 240_000 },
  async (t) => {
    const lab = await agentNamespace(t, 'kt-agent');
    const { ns, api, nsIP } = lab;
    let refresher: NodeJS.Timeout | null = null;
    t.after(() => {
      if (refresher) clearInterval(refresher);
    });

    api.addNode(node('a', { location: 'eu', key: null, lastSeen: null, podCIDR: '10.42.0.0/24' }));
    api.addNode(
      node('b', {
        location: 'us',
        endpoint: '203.0.113.2:51820',
        internalIP: '192.168.1.2/24',
        podCIDR: '10.42.1.0/24',
        lastSeen: nowSeconds(),
      }),
    );
    api.addPeer(peer('laptop', { allowedIPs: ['10.5.0.1/32'] }));
    // b's agent is simulated: it checks in like a real one, outage or not (the API object takes it).
    refresher = setInterval(() => {
      for (const name of ['b', 'd']) {
        if (api.node(name))
          api.patchNode(name, { metadata: { annotations: { [Annotation.lastSeen]: String(nowSeconds()) } } });
      }
    }, 10_000);

    const { child: kg, log } = lab.startKg(['--resync-period', '5s', '--clean-up', '--clean-up-interface']);
    const logTail = () => log.slice(-15).join('\n');

    // The local node is published by merge patch and the mesh configured.
    await eventually(
      'a publishes its annotations',
      () => api.node('a')?.metadata?.annotations?.[Annotation.wireGuardIP] === '10.4.0.1/16',
    ).catch((e: Error) => {
      throw new Error(`${e.message}\n${logTail()}`);
    });
    const a = api.node('a')!.metadata!.annotations!;
    assert.equal(a[Annotation.internalIP], `${nsIP}/30`);
    assert.equal(a[Annotation.endpoint], `${nsIP}:51820`);
    assert.equal(a[Annotation.granularity], 'location');
    // The node is published before the device is configured in the same pass: wait for the key.
    await eventually(
      'kilo0 carries the published key',
      () => ns.sh('wg show kilo0 public-key').trim() === a[Annotation.key],
    );
    await eventually('b and laptop are WireGuard peers', () => {
      const p = wgPeers(ns);
      return p.get(wgKey('b')) !== undefined && p.get(wgKey('laptop')) === '10.5.0.1/32';
    });
    assert.match(ns.sh('ip -br addr show kilo0'), /10\.4\.0\.1\/16/);
    await eventually("b's pod CIDR is routed into kilo0", () => /10\.42\.1\.0\/24 .*dev kilo0/.test(kiloRoutes(ns)));

    // Node update and delete, a new node, a Peer change.
    api.patchNode('b', { spec: { podCIDR: '10.42.7.0/24' } });
    await eventually(
      "the route follows b's new pod CIDR",
      () => /10\.42\.7\.0\/24 .*dev kilo0/.test(kiloRoutes(ns)) && !/10\.42\.1\.0\/24/.test(kiloRoutes(ns)),
    );
    assert.match(wgPeers(ns).get(wgKey('b')) ?? '', /10\.42\.7\.0\/24/);
    api.addNode(
      node('d', {
        location: 'asia',
        endpoint: '203.0.113.4:51820',
        internalIP: '192.168.2.4/24',
        podCIDR: '10.42.3.0/24',
        lastSeen: nowSeconds(),
      }),
    );
    await eventually('d joins', () => wgPeers(ns).has(wgKey('d')));
    api.patchPeer('laptop', { spec: { allowedIPs: ['10.5.0.2/32'] } });
    await eventually("the Peer's allowed IPs follow", () => wgPeers(ns).get(wgKey('laptop')) === '10.5.0.2/32');
    api.deleteNode('d');
    await eventually('d leaves', () => !wgPeers(ns).has(wgKey('d')) && !/10\.42\.3\.0\/24/.test(kiloRoutes(ns)));
    // The firewall is the pass's last step; its log line follows it. Let that pass finish before the
    // outage, so its "dataplane updated" is not counted as a write during the outage.
    await eventually('d leaves the firewall', () => !ns.sh('iptables-save -t nat').includes('10.42.3.0/24'));
    await sleep(500);

    const health = async () => (await fetch(`http://${nsIP}:1107/health`).catch(() => null))?.status ?? 0;
    assert.equal(await health(), 200);

    // The API server goes away for a while: nothing on the machine changes.
    // wireguard-go lists peers in map order: compare sorted lines.
    const wgState = () =>
      ns
        .sh('wg show kilo0 dump')
        .split('\n')
        .slice(1)
        .map((l) => l.split('\t').slice(0, 5).join(' '))
        .sort()
        .join('\n');
    const wgBefore = wgState();
    const routesBefore = kiloRoutes(ns);
    await api.stop();
    const logMark = log.length;
    api.addPeer(peer('phone', { allowedIPs: ['10.5.0.7/32'] }));
    await sleep(12_000);
    assert.equal(wgState(), wgBefore);
    assert.equal(kiloRoutes(ns), routesBefore);
    assert.deepEqual(
      log.slice(logMark).filter((l) => l.includes('dataplane updated')),
      [],
      'kg wrote to the dataplane during the outage',
    );
    assert.equal(kg.exitCode, null, `kg exited during the outage\n${logTail()}`);
    await api.restart();
    await eventually(
      'the change made during the outage arrives',
      () => wgPeers(ns).get(wgKey('phone')) === '10.5.0.7/32',
      60_000,
    );
    let status = 0;
    for (let i = 0; i < 100 && status !== 200; i++) {
      status = await health();
      if (status !== 200) await sleep(300);
    }
    assert.equal(status, 200, 'health did not recover');

    // SIGTERM with --clean-up: Kilo's routes, chains and interface go away, kg exits 0.
    const exited = new Promise<number | null>((resolve) => kg.once('exit', (code) => resolve(code)));
    kg.kill('SIGTERM');
    assert.equal(await exited, 0, logTail());
    assert.equal(kiloRoutes(ns), '');
    assert.equal(ns.sh('ip nexthop show protocol 107').trim(), '', "the routes' next-hop objects go with them");
    assert.doesNotMatch(ns.sh('iptables-save'), /KILO/);
    assert.equal(spawnSync('ip', ['-n', ns.name, 'link', 'show', 'kilo0']).status, 1, 'kilo0 is still there');
  },
);
