import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Annotation } from '../../src/model/annotations.js';
import type { Plan } from '../../src/mesh/types.js';
import { planFor, routeLines, twoLocations } from '../helpers/cluster.js';
import { iptablesRulesOf } from '../../src/dataplane/iptables/rules.js';

// twoLocations(): eu-a (leader, 10.1.0.1/24, pods 10.2.1.0/24), eu-b (10.1.0.2, pods 10.2.2.0/24),
// eu-c (10.1.1.3, pods 10.2.3.0/24); us-a, us-b; a Peer. eu-a and eu-b have published their
// Cilium internal IPs, eu-c has not (yet).
const ciliumIPs = (ips: Record<string, string>) =>
  twoLocations(
    Object.fromEntries(
      Object.entries(ips).map(([name, ip]) => [name, { annotations: { [Annotation.ciliumInternalIP]: ip } }]),
    ),
  );
const cluster = () => ciliumIPs({ 'eu-a': '10.2.1.180', 'eu-b': '10.2.2.180', 'eu-c': '' });
const cilium = {
  granularity: 'location' as const,
  compatibility: 'cilium' as const,
  encapsulate: 'crosssubnet' as const,
  local: false,
};

const ipipRules = (plan: Plan) =>
  iptablesRulesOf(plan.firewall)
    .rules.filter((r) => r.chain === 'KILO-IPIP' || r.args.includes('ipencap'))
    .map((r) => `${r.family} ${r.chain} ${r.args.join(' ')}`);

test("--compatibility=cilium: a non-leader sends everything remote by IPIP to its leader's Cilium internal IP", () => {
  const plan = planFor(cluster(), 'eu-b', cilium);
  const lines = routeLines(plan);
  // Both segments' WireGuard IPs, us's pod CIDRs and internal IPs, and the Peer.
  assert.equal(lines.length, 2 + 2 + 2 + 1, lines.join('\n'));
  for (const line of lines) assert.match(line, / via 10\.2\.1\.180 dev tunnel onlink$/, line);
  assert.ok(lines.includes('10.2.8.0/24 via 10.2.1.180 dev tunnel onlink'), lines.join('\n'));
  assert.deepEqual(plan.rules, [], 'no table-1107 rules: there are no routes to location mates without --local');
});

test('--compatibility=cilium: while the leader has not published its Cilium internal IP, the gateway is its pod CIDR network address', () => {
  const plan = planFor(ciliumIPs({ 'eu-a': '' }), 'eu-b', cilium);
  for (const line of routeLines(plan)) assert.match(line, / via 10\.2\.1\.0 dev tunnel onlink$/, line);
});

test("--compatibility=cilium: the leader returns its followers' pod traffic by IPIP to their Cilium internal IPs", () => {
  const lines = routeLines(planFor(cluster(), 'eu-a', cilium));
  assert.ok(lines.includes('10.2.2.0/24 via 10.2.2.180 dev tunnel onlink'), lines.join('\n'));
  assert.ok(
    lines.includes('10.2.3.0/24 via 10.2.3.0 dev tunnel onlink'),
    `unpublished: the pod CIDR network address\n${lines.join('\n')}`,
  );
  assert.ok(lines.includes('10.2.8.0/24 via 10.4.0.2 dev kilo src 10.1.0.1 onlink'), lines.join('\n'));
  assert.ok(
    !lines.some((l) => l.startsWith('10.1.0.2/32') || l.startsWith('10.1.1.3/32')),
    "location mates' internal IPs are Cilium's and the LAN's",
  );
  assert.equal(lines.filter((l) => l.includes('dev tunnel')).length, 2, lines.join('\n'));
});

test('--compatibility=cilium: KILO-IPIP accepts location mates at their internal and their Cilium internal IPs, drops other IPIP', () => {
  const rules = ipipRules(planFor(cluster(), 'eu-b', cilium));
  assert.deepEqual(rules, [
    '4 INPUT -p ipencap -j KILO-IPIP',
    '6 INPUT -p ipencap -j KILO-IPIP',
    '4 KILO-IPIP -s 10.1.0.1/32 -j ACCEPT',
    '4 KILO-IPIP -s 10.2.1.180/32 -j ACCEPT',
    '4 KILO-IPIP -s 10.1.1.3/32 -j ACCEPT',
    '4 INPUT -p ipencap -j DROP',
    '6 INPUT -p ipencap -j DROP',
  ]);
  const plan = planFor(cluster(), 'eu-b', cilium);
  assert.ok(iptablesRulesOf(plan.firewall).chains.some((c) => c.table === 'filter' && c.name === 'KILO-IPIP'));
});

test('--compatibility=cilium with --encapsulate=never: no IPIP rules and no return routes; the gateway is still the Cilium internal IP, as in Kilo', () => {
  const follower = planFor(cluster(), 'eu-b', { ...cilium, encapsulate: 'never' });
  assert.deepEqual(ipipRules(follower), []);
  for (const line of routeLines(follower)) assert.match(line, / via 10\.2\.1\.180 dev private onlink$/, line);
  const leader = routeLines(planFor(cluster(), 'eu-a', { ...cilium, encapsulate: 'never' }));
  assert.ok(!leader.some((l) => l.startsWith('10.2.2.0/24') || l.startsWith('10.2.3.0/24')), leader.join('\n'));
});

test("--compatibility=cilium with --local: location mates at their internal IPs (Kilo's local routes), no second route to their pods", () => {
  const lines = routeLines(planFor(cluster(), 'eu-a', { ...cilium, local: true, encapsulate: 'always' }));
  assert.deepEqual(
    lines.filter((l) => l.startsWith('10.2.2.0/24')),
    ['10.2.2.0/24 via 10.1.0.2 dev tunnel onlink'],
  );
});

test('without --compatibility=cilium the annotation changes nothing: a non-leader reaches its leader at its internal IP', () => {
  const plan = planFor(cluster(), 'eu-b', { ...cilium, compatibility: null });
  for (const line of routeLines(plan)) assert.match(line, / via 10\.1\.0\.1 dev private onlink$/, line);
  assert.deepEqual(ipipRules(plan), [], 'no IPIP rules without --local');
});
