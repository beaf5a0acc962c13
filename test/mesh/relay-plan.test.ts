import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Annotation } from '../../src/model/annotations.js';
import type { Plan } from '../../src/mesh/types.js';
import { graphDOT } from '../../src/mesh/graph.js';
import { renderPlanText } from '../../src/cli/plan-text.js';
import { node, planFor, topologyFor } from '../helpers/cluster.js';

const kiloTs = { [Annotation.meshFlags]: '{"port":51820}' };

function threeLocations(unreachable: Record<string, string> = {}) {
  const spec = (name: string, loc: string, i: number) =>
    node(name, {
      location: loc,
      internalIP: `10.1.${i}.1/24`,
      endpoint: `198.51.100.${i}:51820`,
      podCIDR: `10.2.${i}.0/24`,
      annotations: { ...kiloTs, ...(unreachable[name] ? { [Annotation.unreachable]: unreachable[name] } : {}) },
    });
  return [spec('eu-a', 'eu', 1), spec('eu-b', 'eu', 2), spec('us-a', 'us', 3), spec('ap-a', 'ap', 4)];
}

const cross = { granularity: 'cross' as const, cni: true, iptablesForwardRules: true };
const allowed = (plan: Plan, name: string) => plan.peers.find((p) => p.names.includes(name))!.allowedIPs;

describe('relayed pairs in the plan', () => {
  test('no unreachable peers: the plan has no relays field and is as before', () => {
    const plan = planFor(threeLocations(), 'eu-a', cross);
    assert.equal('relays' in plan, false);
  });

  test("at each end the other's allowed IPs move to the relay's entry; the direct entry keeps its WireGuard IP", () => {
    const before = planFor(threeLocations(), 'eu-a', cross);
    const objects = threeLocations({ 'us-a': 'eu-a' });
    const a = planFor(objects, 'eu-a', cross);
    // WireGuard IPs by key order: ap-a .1, eu-a .2, eu-b .3, us-a .4.
    assert.deepEqual(allowed(a, 'us-a'), ['10.4.0.4/32']);
    assert.deepEqual(allowed(a, 'ap-a'), ['10.2.4.0/24', '10.1.4.1/32', '10.4.0.1/32', '10.2.3.0/24', '10.1.3.1/32']);
    assert.deepEqual(a.relays, [{ pair: ['eu-a', 'us-a'], via: 'ap-a' }]);
    assert.deepEqual(a.routes, before.routes, 'routes stay: WireGuard picks the peer');
    const b = planFor(objects, 'us-a', cross);
    assert.deepEqual(allowed(b, 'eu-a'), ['10.4.0.2/32']);
    assert.ok(allowed(b, 'ap-a').includes('10.2.1.0/24'));
    // eu-b, not an end, keeps its direct path to us-a.
    const mate = planFor(objects, 'eu-b', cross);
    assert.equal('relays' in mate, false);
    assert.ok(allowed(mate, 'us-a').includes('10.2.3.0/24'));
  });

  test('the relay keeps both ends whole, masquerades neither and forwards their pods', () => {
    const before = planFor(threeLocations(), 'ap-a', cross);
    const r = planFor(threeLocations({ 'eu-a': 'us-a' }), 'ap-a', cross);
    assert.deepEqual(r.peers, before.peers);
    assert.deepEqual(r.firewall.masquerade, before.firewall.masquerade);
    assert.deepEqual(r.relays, [{ pair: ['eu-a', 'us-a'], via: 'ap-a' }]);
    assert.deepEqual(r.firewall.forwardPodCIDRs, [...before.firewall.forwardPodCIDRs, '10.2.1.0/24', '10.2.3.0/24']);
  });

  test('the relay counts what it relays (kgctl plan shows the rule, both backends); the ends and others do not', () => {
    const objects = threeLocations({ 'eu-a': 'us-a' });
    const r = planFor(objects, 'ap-a', cross);
    assert.equal(r.firewall.countRelayed, true);
    for (const n of ['eu-a', 'us-a', 'eu-b'])
      assert.equal('countRelayed' in planFor(objects, n, cross).firewall, false, n);
    assert.equal('countRelayed' in planFor(threeLocations(), 'ap-a', cross).firewall, false);
    const iptables = renderPlanText(r);
    // At the head of FORWARD, before Kilo's accepts, in both families.
    const forward = iptables.split('\n').filter((l) => l.startsWith('-I FORWARD'));
    const counting =
      '-I FORWARD -i kilo -o kilo -m comment --comment "Kilo: count packets relayed between WireGuard peers"';
    assert.equal(forward[0], counting);
    assert.equal(forward.filter((l) => l === counting).length, 2);
    assert.match(
      renderPlanText(r, { firewall: 'nftables' }),
      /\tchain relayed \{\n\t\ttype filter hook forward priority filter; policy accept;\n\t\tmeta iifname kilo meta oifname kilo counter comment "Kilo: count packets relayed between WireGuard peers"\n/,
    );
  });

  test('the relay of two pairs with one end in common forwards that end’s pods once', () => {
    // eu-a cannot reach us-a nor us-b: ap-a, the one node of a third location, relays both pairs.
    const objects = [
      ...threeLocations({ 'eu-a': 'us-a,us-b' }),
      node('us-b', {
        location: 'us',
        internalIP: '10.1.5.1/24',
        endpoint: '198.51.100.5:51820',
        podCIDR: '10.2.5.0/24',
        annotations: kiloTs,
      }),
    ];
    const r = planFor(objects, 'ap-a', cross);
    assert.deepEqual(
      r.relays?.map((p) => p.via),
      ['ap-a', 'ap-a'],
    );
    const cidrs = r.firewall.forwardPodCIDRs;
    assert.deepEqual(cidrs, [...new Set(cidrs)], cidrs.join(' '));
    assert.ok(cidrs.includes('10.2.1.0/24') && cidrs.includes('10.2.5.0/24'));
  });

  test('no relay qualifies: the pair stays direct and the plan says so', () => {
    const objects = threeLocations({ 'eu-a': 'us-a,ap-a' });
    const a = planFor(objects, 'eu-a', cross);
    assert.deepEqual(
      a.relays?.find((p) => p.pair[1] === 'us-a'),
      { pair: ['eu-a', 'us-a'], via: null },
    );
    assert.ok(allowed(a, 'us-a').includes('10.2.3.0/24'));
  });
});

describe('relayed pairs shown', () => {
  test('kgctl graph draws the direct link dotted and names the relay; without relays the graph is as before', () => {
    const plain = graphDOT(topologyFor(threeLocations(), 'eu-a', cross), { layout: 'dot' });
    const relayed = graphDOT(topologyFor(threeLocations({ 'eu-a': 'us-a' }), 'eu-a', cross), { layout: 'dot' });
    const changed = relayed.split('\n').filter((l) => !plain.includes(l));
    assert.equal(changed.length, 1);
    assert.match(changed[0]!, /"node\/eu-a" -> "node\/us-a" \[style=dotted.*label="relayed through ap-a"/);
  });

  test('kgctl plan heads its text with the relayed pairs', () => {
    const text = renderPlanText(planFor(threeLocations({ 'eu-a': 'us-a' }), 'ap-a', cross));
    assert.match(text, /# {3}eu-a <-> us-a: through this node\n/);
    assert.doesNotMatch(renderPlanText(planFor(threeLocations(), 'ap-a', cross)), /relayed/);
  });
});
