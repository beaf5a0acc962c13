import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { nodeConfig } from '../../src/cli/showconf-conf.js';
import { planNode, wireGuardAddresses } from '../../src/mesh/plan.js';
import { Cidr, IP } from '../../src/net/cidr.js';
import { Annotation } from '../../src/model/annotations.js';
import { ofFamily } from '../../src/net/family.js';
import { meshOptions, node, planFor, routeLines, ruleLines, topologyFor, twoLocations } from '../helpers/cluster.js';

const location = { granularity: 'location' as const };

/** twoLocations with an IPv6 pod CIDR beside each IPv4 one (spec.podCIDRs, IPv6 listed first on us-b). */
const dualPods = () =>
  twoLocations({
    'eu-a': { podCIDRs: ['10.2.1.0/24', 'fd42:1::/64'] },
    'eu-b': { podCIDRs: ['10.2.2.0/24', 'fd42:2::/64'] },
    'eu-c': { podCIDRs: ['10.2.3.0/24', 'fd42:3::/64'] },
    'us-a': { podCIDRs: ['10.2.8.0/24', 'fd42:8::/64'] },
    'us-b': { podCIDR: 'fd42:9::/64', podCIDRs: ['fd42:9::/64', '10.2.9.0/24'] },
  });

describe('pod CIDRs of two families', () => {
  test("a segment's allowed IPs hold each member's pod CIDRs, IPv4's first", () => {
    const t = topologyFor(dualPods(), 'eu-a', location);
    const us = t.segments.find((s) => s.key === 'location:us')!;
    assert.deepEqual(us.allowedIPs.map(String), [
      '10.2.8.0/24',
      'fd42:8::/64',
      '10.8.0.1/32',
      '10.2.9.0/24',
      'fd42:9::/64',
      '10.8.0.2/32',
      '10.4.0.2/32',
    ]);
  });

  test('a leader routes both families into WireGuard; the IPv6 route has no IPv4 gateway or source', () => {
    const lines = routeLines(planFor(dualPods(), 'eu-a', location));
    for (const want of [
      '10.2.8.0/24 via 10.4.0.2 dev kilo src 10.1.0.1 onlink',
      'fd42:8::/64 dev kilo',
      '10.2.9.0/24 via 10.4.0.2 dev kilo src 10.1.0.1 onlink',
      'fd42:9::/64 dev kilo',
    ])
      assert.ok(lines.includes(want), `${want} in ${lines.join('\n')}`);
  });

  test("mates' IPv6 pod CIDRs go to their IPv6 internal IPs in the clear, never via an IPv4 gateway", () => {
    // Without an IPv6 internal IP a mate's IPv6 pods have no route over the private network: Linux
    // refuses an IPv4 next hop for an IPv6 route, and IPIP's tunl0 carries IPv4 only.
    const without = routeLines(planFor(dualPods(), 'eu-b', { ...location, encapsulate: 'always' }));
    assert.ok(!without.some((l) => l.startsWith('fd42:1::/64')), without.join('\n'));
    const withIPv6 = dualPods().map((o) =>
      o.kind === 'Node' && o.metadata!.name!.startsWith('eu-')
        ? node(o.metadata!.name!, {
            location: 'eu',
            internalIP: o.metadata!.annotations![Annotation.internalIP]!,
            endpoint: o.metadata!.annotations![Annotation.endpoint]!,
            podCIDRs: (o.spec as { podCIDRs: string[] }).podCIDRs,
            annotations: { [Annotation.internalIPv6]: `fd10::${o.metadata!.name!.slice(-1) === 'a' ? 1 : 2}/64` },
          })
        : o,
    );
    const lines = routeLines(planFor(withIPv6, 'eu-b', { ...location, encapsulate: 'always' }));
    assert.ok(lines.includes('fd42:1::/64 via fd10::1 dev private onlink'), lines.join('\n'));
  });

  test("mates' pod CIDRs of the gateway's family go through it, with one host route and rule for it", () => {
    const plan = planFor(dualPods(), 'eu-b', { ...location, encapsulate: 'always' });
    const lines = routeLines(plan);
    assert.ok(lines.includes('10.2.1.0/24 via 10.1.0.1 dev tunnel onlink'), lines.join('\n'));
    assert.equal(lines.filter((l) => l === '10.1.0.1/32 via 10.1.0.1 dev tunnel table 1107 onlink').length, 1);
    // The rule's source is the own pod CIDR of the gateway's family.
    assert.deepEqual(
      ruleLines(plan).filter((r) => r.includes('to 10.1.0.1/32')),
      ['from 10.2.2.0/24 to 10.1.0.1/32 lookup 1107'],
    );
  });

  test('a follower sends both families of the remote pod CIDRs to its leader', () => {
    const lines = routeLines(planFor(dualPods(), 'eu-b', location));
    assert.ok(lines.includes('10.2.8.0/24 via 10.1.0.1 dev tunnel onlink'), lines.join('\n'));
    // The IPv6 ones need the leader's IPv6 internal IP, which these nodes lack.
    assert.ok(!lines.some((l) => l.startsWith('fd42:8::/64')), lines.join('\n'));
  });

  test("the plan has one WireGuard IP, Kilo's field, and no list of them", () => {
    const plan = planFor(dualPods(), 'eu-a', location);
    assert.equal(plan.wireGuardIP, '10.4.0.1/16');
    assert.ok(!('wireGuardIPs' in plan));
    assert.deepEqual(wireGuardAddresses(plan), ['10.4.0.1/16']);
    assert.deepEqual(wireGuardAddresses(planFor(dualPods(), 'eu-b', location)), []);
  });
});

describe('WireGuard IPs of two families (what the dual-stack allocation fills in)', () => {
  test('wireGuardIP stays the first (IPv4) one; wireGuardIPs lists both, and the interface gets both', () => {
    const subnets = [Cidr.parse('10.4.0.0/16'), Cidr.parse('fd4b::/64')];
    const t = topologyFor(twoLocations(), 'eu-a', { ...location, subnets });
    const plan = planNode(t, meshOptions({ ...location, subnets }));
    assert.equal(plan.wireGuardIP, '10.4.0.1/16');
    assert.deepEqual(
      plan.wireGuardIPs?.map((a) => a.split('/')[0]),
      ['10.4.0.1', 'fd4b::1'],
    );
    assert.deepEqual(wireGuardAddresses(plan), plan.wireGuardIPs);
    assert.deepEqual(nodeConfig(plan).interface!.address, plan.wireGuardIPs);
    // In the JSON right after wireGuardIP.
    const keys = Object.keys(plan);
    assert.equal(keys.indexOf('wireGuardIPs'), keys.indexOf('wireGuardIP') + 1);
  });

  test('ofFamily finds the value of a family or none', () => {
    const ips = [IP.parse('10.4.0.1'), IP.parse('fd4b::1')];
    assert.equal(ofFamily(ips, 6)?.text, 'fd4b::1');
    assert.equal(ofFamily(ips, 4)?.text, '10.4.0.1');
    assert.equal(ofFamily(ips.slice(0, 1), 6), null);
  });
});
