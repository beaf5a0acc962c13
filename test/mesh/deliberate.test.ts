/** The places where kilo-ts deliberately differs from Kilo (SEMANTICS.md, "Deliberate differences"). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Plan } from '../../src/mesh/types.js';
import { granularities } from '../../src/model/types.js';
import { PrefixSet } from '../../src/net/aggregate.js';
import { Cidr } from '../../src/net/cidr.js';
import { peer, peerNames, planFor, routeLines, sorted, topologyFor, twoLocations } from '../helpers/cluster.js';
import { iptablesRulesOf } from '../../src/dataplane/iptables/rules.js';

const cross = { granularity: 'cross' as const };

describe('cross: a node without an internal IP', () => {
  // eu-c has no internal IP: it cannot be reached over eu's private network.
  const objs = () => twoLocations({ 'eu-c': { internalIP: '' } });
  const wgIP = (name: string) =>
    topologyFor(objs(), name, cross)
      .segments.find((s) => s.key === `node:${name}`)!
      .wireGuardIPs.join();

  test('every node computes a plan without crashing', () => {
    for (const host of ['eu-a', 'eu-b', 'eu-c', 'us-a', 'us-b']) {
      for (const encapsulate of ['never', 'crosssubnet', 'always'] as const) {
        assert.doesNotThrow(() => planFor(objs(), host, { ...cross, encapsulate }), `${host} ${encapsulate}`);
      }
    }
  });

  test('its location mates have it as a WireGuard peer and route to it via kilo', () => {
    for (const host of ['eu-a', 'eu-b']) {
      const plan = planFor(objs(), host, cross);
      assert.ok(peerNames(plan).includes('eu-c'), `${host}: ${peerNames(plan).join(', ')}`);
      const lines = routeLines(plan);
      assert.ok(
        lines.some((r) => r.startsWith(`10.2.3.0/24 via ${wgIP('eu-c')} dev kilo`)),
        lines.join('\n'),
      );
      assert.ok(
        !lines.some((r) => r.startsWith('10.2.3.0/24') && !r.includes('dev kilo')),
        'no route in the clear to it',
      );
    }
  });

  test('it has its location mates as WireGuard peers and routes to them via kilo', () => {
    const plan = planFor(objs(), 'eu-c', cross);
    assert.deepEqual(peerNames(plan), ['eu-a', 'eu-b', 'us-a', 'us-b', 'laptop']);
    const lines = routeLines(plan);
    assert.ok(lines.includes(`10.2.1.0/24 via ${wgIP('eu-a')} dev kilo onlink`), lines.join('\n'));
    assert.ok(lines.includes(`10.2.2.0/24 via ${wgIP('eu-b')} dev kilo onlink`), lines.join('\n'));
    assert.ok(
      lines.every((r) => r.includes('dev kilo')),
      'nothing in the clear',
    );
    assert.deepEqual(plan.rules, []);
  });

  test('the other nodes of its location still route to each other in the clear', () => {
    const plan = planFor(objs(), 'eu-a', { ...cross, encapsulate: 'never' });
    assert.ok(!peerNames(plan).includes('eu-b'));
    assert.ok(routeLines(plan).includes('10.2.2.0/24 via 10.1.0.2 dev private onlink'));
    assert.ok(
      routeLines(planFor(objs(), 'eu-b', { ...cross, encapsulate: 'never' })).includes(
        '10.2.1.0/24 via 10.1.0.1 dev private onlink',
      ),
    );
  });

  test('other locations reach it directly over WireGuard', () => {
    const plan = planFor(objs(), 'us-a', cross);
    assert.deepEqual(peerNames(plan), ['eu-a', 'eu-b', 'eu-c', 'laptop']);
    assert.ok(routeLines(plan).includes(`10.2.3.0/24 via ${wgIP('eu-c')} dev kilo src 10.8.0.1 onlink`));
  });
});

const ipipAccepts = (plan: Plan) =>
  iptablesRulesOf(plan.firewall)
    .rules.filter((r) => r.chain === 'KILO-IPIP' && r.args.at(-1) === 'ACCEPT')
    .map((r) => r.args[r.args.indexOf('-s') + 1] ?? '');

describe('IPIP accept list', () => {
  test('cross: exactly the internal IPs of the other nodes of the own location', () => {
    assert.deepEqual(sorted(ipipAccepts(planFor(twoLocations(), 'eu-a', cross))), ['10.1.0.2/32', '10.1.1.3/32']);
    assert.deepEqual(sorted(ipipAccepts(planFor(twoLocations(), 'eu-c', cross))), ['10.1.0.1/32', '10.1.0.2/32']);
    assert.deepEqual(ipipAccepts(planFor(twoLocations(), 'us-a', cross)), ['10.8.0.2/32']);
  });

  test('cross: a mate without an internal IP is not on the list; it has no list entries itself', () => {
    const objs = twoLocations({ 'eu-c': { internalIP: '' } });
    assert.deepEqual(ipipAccepts(planFor(objs, 'eu-a', cross)), ['10.1.0.2/32']);
    assert.deepEqual(ipipAccepts(planFor(objs, 'eu-c', cross)), []);
  });

  test('subnet: exactly the internal IPs of the other nodes of the own group', () => {
    assert.deepEqual(ipipAccepts(planFor(twoLocations(), 'eu-a', { granularity: 'subnet' })), ['10.1.0.2/32']);
    assert.deepEqual(ipipAccepts(planFor(twoLocations(), 'us-b', { granularity: 'subnet' })), ['10.8.0.1/32']);
    assert.deepEqual(ipipAccepts(planFor(twoLocations(), 'eu-c', { granularity: 'subnet' })), []);
  });

  test('location: the location mates, on the leader and on the others', () => {
    assert.deepEqual(sorted(ipipAccepts(planFor(twoLocations(), 'eu-a'))), ['10.1.0.2/32', '10.1.1.3/32']);
    assert.deepEqual(sorted(ipipAccepts(planFor(twoLocations(), 'eu-b'))), ['10.1.0.1/32', '10.1.1.3/32']);
  });

  test('the INPUT jump to KILO-IPIP comes before the DROP of other IPIP', () => {
    const input = iptablesRulesOf(planFor(twoLocations(), 'eu-a', cross).firewall).rules.filter(
      (r) => r.chain === 'INPUT' && r.family === 4,
    );
    assert.deepEqual(
      input.map((r) => `${r.args.join(' ')} ${r.position}`),
      ['-p ipencap -j KILO-IPIP append', '-p ipencap -j DROP append'],
    );
  });

  test('no IPIP chain without encapsulation or without --local', () => {
    for (const o of [
      { encapsulate: 'never' as const, local: true },
      { encapsulate: 'always' as const, local: false },
    ]) {
      const fw = iptablesRulesOf(planFor(twoLocations(), 'eu-a', { ...cross, ...o }).firewall);
      assert.ok(!fw.chains.some((c) => c.name === 'KILO-IPIP'), JSON.stringify(o));
      assert.ok(!fw.rules.some((r) => r.chain === 'KILO-IPIP' || r.args.includes('ipencap')), JSON.stringify(o));
    }
  });
});

describe('firewall', () => {
  const services = [Cidr.parse('10.43.0.0/16'), Cidr.parse('fd43::/112')];
  const objs = () => [
    ...twoLocations({ 'eu-b': { allowedLocationIPs: '192.168.50.0/24' } }),
    peer('phone', { allowedIPs: ['10.5.0.2/32', 'fd05::2/128'] }),
  ];
  const natReturns = (plan: Plan, family: 4 | 6) =>
    iptablesRulesOf(plan.firewall)
      .rules.filter((r) => r.chain === 'KILO-NAT' && r.family === family)
      .map((r) => `${r.args.join(' ')}`);

  test('cross: KILO-NAT returns WireGuard IPs, known IPs, Peer IPs, then services, each aggregated, then masquerades', () => {
    const plan = planFor(objs(), 'eu-a', { ...cross, serviceCIDRs: services });
    const returns = (family: 4 | 6) =>
      iptablesRulesOf(plan.firewall)
        .rules.filter((r) => r.chain === 'KILO-NAT' && r.family === family)
        .map((r) => `${r.args.join(' ')} # ${r.comment}`);
    const wg = '# Kilo: do not NAT packets destined for WireGuard IPs';
    const known = '# Kilo: do not NAT packets destined for known IPs';
    const peers = '# Kilo: do not NAT packets destined for peers';
    const svc = '# Kilo: do not NAT packets destined for service CIDRs';
    // The five WireGuard /32s also appear among the allowed IPs: returned once, as WireGuard IPs.
    assert.deepEqual(returns(4), [
      `-d 10.4.0.1/32 -j RETURN ${wg}`,
      `-d 10.4.0.2/31 -j RETURN ${wg}`,
      `-d 10.4.0.4/31 -j RETURN ${wg}`,
      `-d 10.1.0.1/32 -j RETURN ${known}`,
      `-d 10.1.0.2/32 -j RETURN ${known}`,
      `-d 10.1.1.3/32 -j RETURN ${known}`,
      `-d 10.2.1.0/24 -j RETURN ${known}`,
      `-d 10.2.2.0/23 -j RETURN ${known}`,
      `-d 10.2.8.0/23 -j RETURN ${known}`,
      `-d 10.8.0.1/32 -j RETURN ${known}`,
      `-d 10.8.0.2/32 -j RETURN ${known}`,
      `-d 192.168.50.0/24 -j RETURN ${known}`,
      `-d 10.5.0.1/32 -j RETURN ${peers}`,
      `-d 10.5.0.2/32 -j RETURN ${peers}`,
      `-d 10.43.0.0/16 -j RETURN ${svc}`,
      '-j MASQUERADE # Kilo: NAT remaining packets',
    ]);
    assert.deepEqual(natReturns(plan, 6), ['-d fd05::2/128 -j RETURN', '-d fd43::/112 -j RETURN', '-j MASQUERADE']);
  });

  test('location: a follower returns the same mesh addresses as its leader', () => {
    const leader = planFor(objs(), 'eu-a', { serviceCIDRs: services });
    const follower = planFor(objs(), 'eu-b', { serviceCIDRs: services });
    assert.deepEqual(sorted(natReturns(follower, 4)), sorted(natReturns(leader, 4)));
    const returned = new PrefixSet(
      iptablesRulesOf(follower.firewall)
        .rules.filter((r) => r.chain === 'KILO-NAT' && r.args[0] === '-d')
        .map((r) => Cidr.parse(r.args[1]!)),
    );
    for (const c of ['10.2.9.0/24', '10.8.0.2/32', '10.4.0.2/32', '10.4.0.1/32', '192.168.50.0/24', '10.5.0.2/32']) {
      assert.ok(returned.covers(Cidr.parse(c)), c);
    }
    assert.equal(natReturns(follower, 4).at(-1), '-j MASQUERADE');
  });

  test("POSTROUTING jumps: own pod CIDR (with --cni), Peer sources, own location's allowed-location IPs", () => {
    const jumps = (host: string, cni: boolean) =>
      iptablesRulesOf(planFor(objs(), host, { ...cross, cni }).firewall)
        .rules.filter((r) => r.chain === 'POSTROUTING')
        .map((r) => `${r.args.join(' ')}`);
    assert.deepEqual(
      sorted(jumps('eu-a', true)),
      sorted([
        '-s 10.2.1.0/24 -j KILO-NAT',
        '-d 192.168.50.0/24 -j KILO-NAT',
        '-s 10.5.0.1/32 -j KILO-NAT',
        '-s 10.5.0.2/32 -j KILO-NAT',
        '-s fd05::2/128 -j KILO-NAT',
      ]),
    );
    assert.ok(!jumps('eu-a', false).includes('-s 10.2.1.0/24 -j KILO-NAT'), 'no pod CIDR jump without --cni');
    assert.ok(
      !jumps('us-a', true).includes('-d 192.168.50.0/24 -j KILO-NAT'),
      "another location's allowed-location IP is not ours",
    );
  });

  test('every rule carries a comment starting with "Kilo:"', () => {
    for (const granularity of granularities) {
      for (const host of ['eu-a', 'eu-b', 'us-b']) {
        const plan = planFor(objs(), host, {
          granularity,
          serviceCIDRs: services,
          iptablesForwardRules: true,
          cni: true,
        });
        assert.ok(iptablesRulesOf(plan.firewall).rules.length > 0);
        for (const r of iptablesRulesOf(plan.firewall).rules)
          assert.match(r.comment, /^Kilo: \S/, `${granularity} ${host}: ${r.chain} ${r.args.join(' ')}`);
      }
    }
  });

  test('rules match the family of their addresses', () => {
    const plan = planFor(objs(), 'eu-a', { ...cross, serviceCIDRs: services });
    for (const r of iptablesRulesOf(plan.firewall).rules) {
      const addr = r.args.find((a) => a.includes('/'));
      if (addr) assert.equal(Cidr.parse(addr).family, r.family, `${r.chain} ${r.args.join(' ')}`);
    }
  });
});

describe('an IPv6 destination in a mesh with an IPv4 WireGuard subnet', () => {
  // us-b's pods are IPv6; the laptop also has an IPv6 address.
  const objs = () => [
    ...twoLocations({ 'us-b': { podCIDR: 'fd42:9::/64' } }).filter((o) => o.metadata?.name !== 'laptop'),
    peer('laptop', { allowedIPs: ['10.5.0.1/32', 'fd05::1/128'] }),
  ];

  test('is routed via kilo without a gateway (Linux has no IPv4 next hop for IPv6); IPv4 keeps Kilo’s gateway', () => {
    const lines = routeLines(planFor(objs(), 'eu-a', cross));
    const v6 = lines.filter((l) => l.startsWith('fd'));
    assert.deepEqual(sorted(v6), ['fd05::1/128 dev kilo', 'fd42:9::/64 dev kilo']);
    assert.ok(
      lines.some((l) => /^10\.2\.8\.0\/24 via 10\.4\.0\.\d+ dev kilo src 10\.1\.0\.1 onlink$/.test(l)),
      lines.join('\n'),
    );
  });
});
