/**
 * The agent's HTTP endpoints over a real socket, fed by an agent on fakes (see agent-harness.ts):
 * /health tells a failing reconcile and a stale backend apart from a healthy node, /metrics
 * carries Kilo's names and per-peer series, /graph returns the mesh.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { describe, test, type TestContext } from 'node:test';
import { createAgentServer } from '../../src/agent/http.js';
import { peer, wgKey } from '../helpers/cluster.js';
import { eventually, settled, startHarness, type Harness } from './agent-harness.js';

async function serve(
  t: TestContext,
  h: Harness,
  staleAfterMs = 120_000,
): Promise<(path: string) => Promise<{ status: number; type: string; body: string }>> {
  const server = createAgentServer({ agent: h.agent, source: h.source, metrics: h.metrics, staleAfterMs });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const port = (server.address() as AddressInfo).port;
  return async (path) => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`);
    return { status: res.status, type: res.headers.get('content-type') ?? '', body: await res.text() };
  };
}

describe('agent HTTP', () => {
  test('/health: 200 when healthy, 503 naming the failure after a failed reconcile, 200 again once fixed', async (t) => {
    const h = await startHarness(t);
    await settled(h);
    const get = await serve(t, h);
    assert.deepEqual(await get('/health'), { status: 200, type: 'text/plain', body: 'ok\n' });

    // The encapsulation interface vanishes: the routes through it cannot be written.
    h.kernel.deleteLink('tunl0');
    await h.agent.reconcileOnce();
    const bad = await get('/health');
    assert.equal(bad.status, 503);
    assert.match(bad.body, /^last reconcile failed: .*routes.*tunl0/);

    h.kernel.addLink('tunl0', {});
    await h.agent.reconcileOnce();
    assert.equal((await get('/health')).status, 200);
  });

  test('/health: 503 while the backend is out of sync for longer than the threshold, 200 once it is back', async (t) => {
    const h = await startHarness(t);
    await settled(h);
    const get = await serve(t, h, 1_000);
    assert.equal((await get('/health')).status, 200);
    await h.api.stop();
    let last = { status: 0, body: '' };
    await eventually('/health fails', async () => (last = await get('/health')).status === 503);
    assert.match(last.body, /^no news from the cluster for \d+ s/);
    await h.api.restart();
    await eventually('/health recovers', async () => (await get('/health')).status === 200, 15_000);
  });

  test("/metrics: Kilo's names, values from the mesh, WireGuard totals, per-peer series with --metrics-per-peer", async (t) => {
    const h = await startHarness(t, { metricsPerPeer: true });
    await settled(h);
    h.device.handshake(wgKey('c'), 1_764_662_399, 1000);
    await h.agent.reconcileOnce();
    const get = await serve(t, h);
    const m = await get('/metrics');
    assert.equal(m.status, 200);
    assert.match(m.type, /^text\/plain/);
    // a, b, c are ready (the local node included); one Peer; a leads eu.
    assert.match(m.body, /^kilo_nodes 3$/m);
    assert.match(m.body, /^kilo_peers 1$/m);
    assert.match(m.body, /^kilo_leader 1$/m);
    assert.match(m.body, /^kilo_errors_total 0$/m);
    const reconciles = Number(/^kilo_reconciles_total (\d+)$/m.exec(m.body)?.[1]);
    assert.ok(reconciles >= 2 && reconciles === h.agent.status.reconciles);
    assert.ok(m.body.includes(`kilo_wireguard_peer_latest_handshake_seconds{public_key="${wgKey('c')}"} 1764662399`));
    assert.ok(m.body.includes(`kilo_wireguard_peer_receive_bytes{public_key="${wgKey('c')}"} 1000`));
    assert.ok(m.body.includes(`kilo_wireguard_peer_transmit_bytes{public_key="${wgKey('laptop')}"} 0`));
    // c handshook a second ago (the harness clock); the laptop never did.
    assert.match(m.body, /^kilo_wireguard_peers\{handshake="recent"\} 1$/m);
    assert.match(m.body, /^kilo_wireguard_peers\{handshake="never"\} 1$/m);
    assert.match(m.body, /^kilo_wireguard_receive_bytes 1000$/m);

    // A removed peer's series disappear with it.
    h.api.deletePeer('laptop');
    await eventually('the Peer is gone', async () => !(await h.peerKeys()).includes(wgKey('laptop')));
    await settled(h);
    const after = (await get('/metrics')).body;
    assert.ok(!after.includes(wgKey('laptop')), 'a removed peer still has series');
    assert.match(after, /^kilo_peers 0$/m);

    // A new peer's series come with the next read of the device (the plan's keys follow the plan).
    h.api.addPeer(peer('phone', { allowedIPs: ['10.5.0.2/32'] }));
    await eventually('the Peer is written', async () => (await h.peerKeys()).includes(wgKey('phone')));
    h.agent.resync();
    await settled(h);
    const added = (await get('/metrics')).body;
    assert.ok(added.includes(`kilo_wireguard_peer_transmit_bytes{public_key="${wgKey('phone')}"} 0`), added);
  });

  test('/graph: DOT by default, SVG on request, 400 for an unknown format', async (t) => {
    const h = await startHarness(t);
    await settled(h);
    const get = await serve(t, h);
    const dot = await get('/graph');
    assert.equal(dot.status, 200);
    assert.equal(dot.type, 'text/vnd.graphviz');
    assert.match(dot.body, /^digraph kilo \{/);
    for (const id of ['node/a', 'node/b', 'node/c', 'peer/laptop'])
      assert.ok(dot.body.includes(`"${id}" [`), `${id} missing from the graph`);
    const svg = await get('/graph?format=svg');
    assert.equal(svg.status, 200);
    assert.match(svg.body, /<svg[\s>]/);
    assert.equal((await get('/graph?format=png')).status, 400);
    assert.equal((await get('/nope')).status, 404);
  });
});
