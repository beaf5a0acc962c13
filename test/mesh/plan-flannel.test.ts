import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planFor, routeLines, twoLocations } from '../helpers/cluster.js';
import { iptablesRulesOf } from '../../src/dataplane/iptables/rules.js';

// twoLocations(): eu-a (leader, 10.1.0.1, pods 10.2.1.0/24), eu-b, eu-c; us-a, us-b; a Peer.
const flannel = { granularity: 'location' as const, compatibility: 'flannel' as const, encapsulate: 'always' as const };

test("--compatibility=flannel: a non-leader reaches its leader at the leader's VTEP address over flannel.1, no tunnel of ours", () => {
  const plan = planFor(twoLocations(), 'eu-b', { ...flannel, local: false });
  const lines = routeLines(plan);
  assert.ok(lines.length > 0);
  for (const line of lines) assert.match(line, / via 10\.2\.1\.0 dev private onlink$/, line);
  assert.deepEqual(plan.rules, [], 'no table-1107 rules: flannel encapsulates');
  assert.ok(!iptablesRulesOf(plan.firewall).chains.some((c) => c.name === 'KILO-IPIP'), 'no IPIP accept list');
});

test('--compatibility=flannel with --local: location mates via their VTEP addresses; without flannel, via their internal IPs', () => {
  const withFlannel = routeLines(planFor(twoLocations(), 'eu-a', { ...flannel, local: true }));
  assert.ok(withFlannel.includes('10.2.2.0/24 via 10.2.2.0 dev private onlink'), withFlannel.join('\n'));
  const plain = routeLines(
    planFor(twoLocations(), 'eu-a', { granularity: 'location', encapsulate: 'never', local: true }),
  );
  assert.ok(
    plain.some((l) => l.startsWith('10.2.2.0/24 via 10.1.0.2 dev private')),
    plain.join('\n'),
  );
});
