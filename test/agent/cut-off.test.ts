/**
 * A follower cut off from its leader for want of a common LAN family (docs/dual-stack.md#edge-cases):
 * the agent says it once per change, naming both nodes and their families, and counts such nodes
 * (kilo_cut_off_nodes), as it says and counts a dropped object.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { CutOffWatch } from '../../src/agent/cut-off-watch.js';
import type { Plan, PlanCutOff } from '../../src/mesh/types.js';
import { Annotation } from '../../src/model/annotations.js';
import { Cidr } from '../../src/net/cidr.js';
import type { TestApiServer } from '../fixtures/apiserver.js';
import { node, routeLines } from '../helpers/cluster.js';
import { captureLogger, eventually, seedCluster, settled, startHarness } from './agent-harness.js';

const gauge = async (registry: Registry) => (await registry.metrics()).match(/^kilo_cut_off_nodes (\d+)$/m)?.[1];

describe('CutOffWatch', () => {
  const d: PlanCutOff = { node: 'eu-d', leader: 'eu-c', nodeFamilies: [4], leaderFamilies: [6] };
  const plan = (cutOff?: PlanCutOff[]) => ({ node: 'eu-c', ...(cutOff ? { cutOff } : {}) }) as Plan;

  test('a warning once per change, naming both nodes and the families; the count follows', async () => {
    const log = captureLogger();
    const registry = new Registry();
    const watch = new CutOffWatch(log, registry);
    assert.equal(await gauge(registry), '0');
    watch.observe(plan([d]));
    watch.observe(plan([d]));
    watch.observe(plan([d]));
    const warnings = log.entries.filter((e) => e.level === 'warn');
    assert.equal(warnings.length, 1, JSON.stringify(log.entries));
    assert.deepEqual(warnings[0]!.obj, { node: 'eu-d', leader: 'eu-c', nodeFamilies: [4], leaderFamilies: [6] });
    assert.match(
      warnings[0]!.msg,
      /^eu-d \(LAN IPv4 only\) shares no LAN family with eu-c, its location's leader \(LAN IPv6 only\)/,
    );
    assert.equal(await gauge(registry), '1');
    // Another leader, of the other family: a change, said again.
    watch.observe(plan([{ ...d, leader: 'eu-e' }]));
    assert.equal(log.entries.filter((e) => e.level === 'warn').length, 2);
    assert.match(log.entries.at(-1)!.msg, /with eu-e,/);
    // A second cut-off node: said once, counted.
    const f: PlanCutOff = { node: 'eu-f', leader: 'eu-e', nodeFamilies: [4], leaderFamilies: [6] };
    watch.observe(plan([{ ...d, leader: 'eu-e' }, f]));
    watch.observe(plan([{ ...d, leader: 'eu-e' }, f]));
    assert.equal(log.entries.filter((e) => e.level === 'warn').length, 3);
    assert.equal(await gauge(registry), '2');
    // Mended: said once, not counted.
    watch.observe(plan());
    watch.observe(plan());
    const infos = log.entries.filter((e) => e.level === 'info').map((e) => e.msg);
    assert.deepEqual(infos.sort(), [
      "eu-d is no longer cut off from its location's leader",
      "eu-f is no longer cut off from its location's leader",
    ]);
    assert.equal(await gauge(registry), '0');
  });
});

test('the agent says once per node that IPv4-only nodes are led by an IPv6-only one, and counts them', async (t) => {
  // a (this agent) and b: IPv4 on their LAN; v6: IPv6 only, the annotated leader of eu.
  const seed = (api: TestApiServer) => {
    seedCluster(api);
    api.addNode(
      node('v6', {
        location: 'eu',
        endpoint: '[2001:db8::3]:51820',
        internalIP: 'fd10::3/64',
        podCIDRs: ['10.42.3.0/24', 'fd42:3::/64'],
        leader: true,
      }),
    );
  };
  const subnets = [Cidr.parse('10.4.0.0/16'), Cidr.parse('fd4b::/64')];
  const h = await startHarness(t, { seed, mesh: { granularity: 'location', subnet: subnets[0]!, subnets } });
  await settled(h);
  for (let i = 0; i < 3; i++) await h.agent.reconcileOnce();
  const said = () => h.log.entries.filter((e) => e.level === 'warn' && /shares no LAN family/.test(e.msg));
  const cutOff = [
    { node: 'a', leader: 'v6', nodeFamilies: [4], leaderFamilies: [6] },
    { node: 'b', leader: 'v6', nodeFamilies: [4], leaderFamilies: [6] },
  ];
  assert.deepEqual(
    said().map((e) => e.obj),
    cutOff,
    JSON.stringify(h.log.entries.filter((e) => e.level === 'warn')),
  );
  assert.equal(await gauge(h.metrics.registry), '2');
  assert.deepEqual(h.agent.status.plan?.cutOff, cutOff);
  // v6 gets an IPv4 address on the LAN too (dual-stack): a and b reach it, nothing is cut off.
  h.api.patchNode('v6', {
    metadata: { annotations: { [Annotation.internalIP]: '192.168.0.3/24', [Annotation.internalIPv6]: 'fd10::3/64' } },
  });
  await eventually('a is no longer cut off', () => h.agent.status.plan?.cutOff === undefined);
  await settled(h);
  assert.equal(await gauge(h.metrics.registry), '0');
  assert.equal(said().length, 2);
  const infos = h.log.entries.filter((e) => e.level === 'info' && /no longer cut off/.test(e.msg)).map((e) => e.msg);
  assert.deepEqual(infos, [
    "a is no longer cut off from its location's leader",
    "b is no longer cut off from its location's leader",
  ]);
  const routes = routeLines(h.agent.status.plan);
  assert.ok(
    routes.some((l) => l.startsWith('10.42.2.0/24 via 192.168.0.3')),
    routes.join('\n'),
  );
});
