/** KILO-NAT and the Peer jumps hold their address sets as the fewest prefixes (ARCHITECTURE.md, Decisions). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Plan } from '../../src/mesh/types.js';
import type { IptablesRule } from '../../src/dataplane/iptables/rules.js';
import type { KubeObject } from '../../src/model/parse.js';
import { granularities } from '../../src/model/types.js';
import { PrefixSet } from '../../src/net/aggregate.js';
import { Cidr } from '../../src/net/cidr.js';
import { node, peer, planFor, topologyFor, twoLocations } from '../helpers/cluster.js';
import { iptablesRulesOf } from '../../src/dataplane/iptables/rules.js';

const services = [Cidr.parse('10.43.0.0/16'), Cidr.parse('fd43::/112')];
const objs = () => [
  ...twoLocations({ 'eu-b': { allowedLocationIPs: '192.168.50.0/24' } }),
  peer('phone', { allowedIPs: ['10.5.0.2/32', '10.5.0.3/32', 'fd05::2/128', 'fd05::3/128'] }),
  peer('office', { allowedIPs: ['10.6.0.0/25', '10.6.0.128/25', '10.6.0.7/32'] }),
];

const operand = (r: IptablesRule, flag: '-d' | '-s') => {
  const i = r.args.indexOf(flag);
  return i < 0 ? null : Cidr.parse(r.args[i + 1]!);
};
const returned = (plan: Plan) =>
  iptablesRulesOf(plan.firewall)
    .rules.filter((r) => r.chain === 'KILO-NAT' && r.args.at(-1) === 'RETURN')
    .map((r) => operand(r, '-d')!);
const peerSources = (plan: Plan) =>
  iptablesRulesOf(plan.firewall)
    .rules.flatMap((r) => (r.chain === 'POSTROUTING' ? [operand(r, '-s')] : []))
    .filter((c): c is Cidr => !!c);

/** Both directions: every prefix of each list lies inside the other's addresses. */
function assertSameAddresses(actual: Cidr[], expected: Cidr[], label: string) {
  const a = new PrefixSet(actual);
  const e = new PrefixSet(expected);
  for (const c of expected) assert.ok(a.covers(c), `${label}: ${c.networkText} is not covered`);
  for (const c of actual) assert.ok(e.covers(c), `${label}: ${c.networkText} is more than asked for`);
}

/** 64 nodes in one location as Kubernetes allocates them: consecutive pod CIDRs and internal IPs. */
const contiguous = (skip?: number): KubeObject[] =>
  Array.from({ length: 64 }, (_, i) => i)
    .filter((i) => i !== skip)
    .map((i) =>
      node(`n-${String(i).padStart(2, '0')}`, {
        location: 'dc',
        internalIP: `10.1.0.${i + 1}/24`,
        endpoint: `10.1.0.${i + 1}:51820`,
        podCIDR: `10.42.${i}.0/24`,
      }),
    );

describe('KILO-NAT aggregation', () => {
  test('returns exactly the destinations it did one by one, for every granularity, host and family', () => {
    for (const granularity of granularities) {
      for (const host of ['eu-a', 'eu-b', 'eu-c', 'us-b']) {
        const options = { granularity, serviceCIDRs: services, cni: true };
        const t = topologyFor(objs(), host, options);
        const plan = planFor(objs(), host, options);
        const destinations = [
          ...t.segments.flatMap((s) => [...s.wireGuardIPs.map((ip) => ip.toHostCidr()), ...s.allowedIPs]),
          ...t.peers.flatMap((p) => p.allowedIPs),
          ...services,
        ];
        assertSameAddresses(returned(plan), destinations, `${granularity} ${host} RETURN`);
        const jumps = peerSources(plan).filter(
          (c) => !t.local.node.podCIDRs.some((pod) => c.networkText === pod.networkText),
        );
        assertSameAddresses(
          jumps,
          t.peers.flatMap((p) => p.allowedIPs),
          `${granularity} ${host} POSTROUTING -s`,
        );
      }
    }
  });

  test('sibling Peer prefixes merge; a prefix inside another is dropped', () => {
    const plan = planFor(objs(), 'eu-a', { granularity: 'cross', cni: false });
    const peers = iptablesRulesOf(plan.firewall).rules.filter(
      (r) => r.comment === 'Kilo: do not NAT packets destined for peers',
    );
    // 10.5.0.1 is twoLocations' own Peer; it and 10.5.0.2/31 are neighbours, not halves of one prefix.
    const expected = ['10.5.0.1/32', '10.5.0.2/31', '10.6.0.0/24', 'fd05::2/127'];
    assert.deepEqual(
      peers.map((r) => operand(r, '-d')!.networkText),
      expected,
    );
    assert.deepEqual(
      peerSources(plan).map((c) => c.networkText),
      expected,
    );
  });

  test('within a comment group rules never overlap and run in address order', () => {
    const plan = planFor(objs(), 'eu-a', { granularity: 'cross', serviceCIDRs: services });
    const groups = new Map<string, IptablesRule[]>();
    for (const r of iptablesRulesOf(plan.firewall).rules.filter(
      (r) => r.chain === 'KILO-NAT' && r.args.at(-1) === 'RETURN',
    )) {
      const group = `${r.family} ${r.comment}`;
      groups.set(group, [...(groups.get(group) ?? []), r]);
    }
    assert.equal(groups.size, 6, [...groups.keys()].join(', '));
    for (const [group, rules] of groups) {
      const cidrs = rules.map((r) => operand(r, '-d')!);
      for (const [i, c] of cidrs.entries()) {
        const next = cidrs[i + 1];
        if (!next) continue;
        assert.ok(!c.overlaps(next), `${group}: ${c.networkText} overlaps ${next.networkText}`);
        assert.ok(
          Buffer.compare(c.network.bytes, next.network.bytes) < 0,
          `${group}: ${c.networkText} before ${next.networkText}`,
        );
      }
    }
  });

  test('the input order of nodes and Peers does not change the rules', () => {
    assert.deepEqual(planFor([...objs()].reverse(), 'eu-a').firewall, planFor(objs(), 'eu-a').firewall);
  });

  test('consecutive pod CIDRs, internal IPs and WireGuard IPs collapse into a few rules', () => {
    const nat = iptablesRulesOf(planFor(contiguous(), 'n-00', { granularity: 'cross' }).firewall).rules.filter(
      (r) => r.chain === 'KILO-NAT' && r.family === 4,
    );
    const lines = nat.map((r) => r.args.join(' '));
    // 64 WireGuard IPs from 10.4.0.1: 1, 2-3, 4-7, ..., 32-63, 64; the same for internal IPs from 10.1.0.1.
    const powers = (net: string) =>
      ['1/32', '2/31', '4/30', '8/29', '16/28', '32/27', '64/32'].map((s) => `-d ${net}.${s} -j RETURN`);
    assert.deepEqual(lines, [...powers('10.4.0'), ...powers('10.1.0'), '-d 10.42.0.0/18 -j RETURN', '-j MASQUERADE']);
  });

  test('a node leaving changes a handful of rules, not a chain', () => {
    const nat = (objects: KubeObject[]) =>
      new Set(
        iptablesRulesOf(planFor(objects, 'n-00', { granularity: 'cross' }).firewall)
          .rules.filter((r) => r.chain === 'KILO-NAT')
          .map((r) => `${r.chain} ${r.args.join(' ')}`),
      );
    const before = nat(contiguous());
    const after = nat(contiguous(37));
    const gone = [...before].filter((k) => !after.has(k));
    const added = [...after].filter((k) => !before.has(k));
    // WireGuard IPs are numbered in sort order, so the last one (10.4.0.64) goes; the node's
    // internal IP 10.1.0.38 splits a /27 and its pod CIDR 10.42.37.0/24 the /18.
    assert.deepEqual(gone.sort(), [
      'KILO-NAT -d 10.1.0.32/27 -j RETURN',
      'KILO-NAT -d 10.4.0.64/32 -j RETURN',
      'KILO-NAT -d 10.42.0.0/18 -j RETURN',
    ]);
    assert.deepEqual(
      added.map((k) => k.split(' ')[2]),
      [
        '10.1.0.32/30',
        '10.1.0.36/31',
        '10.1.0.39/32',
        '10.1.0.40/29',
        '10.1.0.48/28',
        '10.42.0.0/19',
        '10.42.32.0/22',
        '10.42.36.0/24',
        '10.42.38.0/23',
        '10.42.40.0/21',
        '10.42.48.0/20',
      ],
    );
  });
});
