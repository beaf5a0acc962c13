/**
 * The per-pair health wired into an agent on fakes: a location mate moved onto another LAN is
 * warned about once, /health says degraded (200: a restart mends nothing) and the Node carries
 * the bounded summary; put back, all three clear.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { createAgentServer } from '../../src/agent/http.js';
import { PathHealth } from '../../src/agent/path-health.js';
import { Prober } from '../../src/agent/health-prober.js';
import { parsePathHealth } from '../../src/agent/health-summary.js';
import { Annotation } from '../../src/model/annotations.js';
import { eventually, startHarness } from './agent-harness.js';

test('a mate on another LAN: warned once, /health degraded, the summary on the Node; undone, all clear', async (t) => {
  const mesh = { granularity: 'cross', encapsulate: 'never' } as const;
  let schedule = () => {};
  const warnings: string[] = [];
  const paths = new PathHealth({
    prober: new Prober(() => Promise.resolve(true)),
    mesh: { encapsulate: 'never', local: true },
    log: { warn: (_o, m) => warnings.push(m), info: () => {} },
    onChange: () => schedule(),
    intervalMs: 50,
  });
  const h = await startHarness(t, { mesh, deps: { paths } });
  schedule = () => h.agent.schedule(undefined, true);
  const server = createAgentServer({
    agent: h.agent,
    source: h.source,
    metrics: h.metrics,
    staleAfterMs: 120_000,
    paths,
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const health = async () => {
    const r = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/health`);
    return { status: r.status, body: await r.text() };
  };
  const published = () => parsePathHealth(h.api.node('a')?.metadata?.annotations?.[Annotation.pathHealth]);

  await eventually('the summary is published', () => published() !== null);
  assert.deepEqual(await health(), { status: 200, body: 'ok\n' });

  h.api.patchNode('b', { metadata: { annotations: { [Annotation.internalIP]: '192.168.7.2/24' } } });
  await eventually('the mistake is on the Node', () => (published()?.pairs.failing ?? 0) === 1);
  assert.equal(
    published()!.failing[0]!.reason,
    "b's internal IP 192.168.7.2/24 is not on a's network 192.168.0.0/24: same location eu, different LANs (use subnet granularity, or fix the location)",
  );
  const degraded = await health();
  assert.equal(degraded.status, 200);
  assert.match(
    degraded.body,
    /^degraded: 1 of \d+ planned paths down: b \(private\): b's internal IP 192\.168\.7\.2\/24/,
  );
  await h.agent.reconcileOnce();
  assert.equal(warnings.filter((w) => /location mistake/.test(w)).length, 1, warnings.join('\n'));

  h.api.patchNode('b', { metadata: { annotations: { [Annotation.internalIP]: '192.168.0.2/24' } } });
  await eventually('the Node says no pair fails', () => published()?.pairs.failing === 0);
  assert.deepEqual(await health(), { status: 200, body: 'ok\n' });
});
