/**
 * A follower sharing no LAN family with its location's leader (docs/dual-stack.md#edge-cases): the
 * plan has no route between them, and says so (plan.cutOff), on the follower's plan and the leader's.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Annotation } from '../../src/model/annotations.js';
import type { MeshOptions } from '../../src/mesh/options.js';
import { Cidr } from '../../src/net/cidr.js';
import { renderPlanText } from '../../src/cli/plan-text.js';
import { node, planFor, routeLines } from '../helpers/cluster.js';

const subnets = [Cidr.parse('10.4.0.0/16'), Cidr.parse('fd4b::/64')];
const dual = (extra: Partial<MeshOptions> = {}): Partial<MeshOptions> => ({
  granularity: 'location',
  subnet: subnets[0]!,
  subnets,
  ...extra,
});

/** A node of location eu with one internal IP, `n` its number. */
const eu = (name: string, n: number, internalIP: string, pods: string[], leader: boolean) =>
  node(name, {
    location: 'eu',
    internalIP,
    endpoint: internalIP.includes(':') ? `[2001:db8:1::${n}]:51820` : `198.51.100.${n}:51820`,
    podCIDRs: pods,
    leader,
  });

/** eu-d: IPv4 only; eu-c: IPv6 only; eu-a: dual-stack. us-a elsewhere. `leader`: who is annotated. */
function cluster(leader: 'eu-c' | 'eu-a' | 'eu-d', withDual = true) {
  return [
    eu('eu-d', 4, '10.1.0.4/24', ['10.2.4.0/24'], leader === 'eu-d'),
    eu('eu-c', 3, 'fd10:1::3/64', ['10.2.3.0/24', 'fd42:3::/64'], leader === 'eu-c'),
    ...(withDual
      ? [
          node('eu-a', {
            location: 'eu',
            internalIP: '10.1.0.1/24',
            endpoint: '198.51.100.1:51820',
            podCIDRs: ['10.2.1.0/24', 'fd42:1::/64'],
            leader: leader === 'eu-a',
            annotations: { [Annotation.internalIPv6]: 'fd10:1::1/64' },
          }),
        ]
      : []),
    node('us-a', {
      location: 'us',
      internalIP: '10.8.0.1/24',
      endpoint: '198.51.100.81:51820',
      podCIDRs: ['10.2.81.0/24'],
    }),
  ];
}

test('an IPv4-only follower of an IPv6-only leader: no route, and the plan says so on both', () => {
  const follower = planFor(cluster('eu-c'), 'eu-d', dual());
  assert.equal(follower.segment.leader, 'eu-c');
  // Its dual-stack mate eu-a is on its LAN; its leader, and so the rest of the mesh, is not.
  const lines = routeLines(follower);
  assert.ok(!lines.some((l) => l.startsWith('10.2.81.') || l.startsWith('10.4.')), lines.join('\n'));
  const want = [{ node: 'eu-d', leader: 'eu-c', nodeFamilies: [4], leaderFamilies: [6] }];
  assert.deepEqual(follower.cutOff, want);
  assert.deepEqual(planFor(cluster('eu-c'), 'eu-c', dual()).cutOff, want);
  // The dual-stack follower of the same leader is fine, and its plan names its cut-off mate.
  assert.deepEqual(planFor(cluster('eu-c'), 'eu-a', dual()).cutOff, want);
  const text = renderPlanText(follower);
  assert.match(
    text,
    /^# warning: eu-d \(LAN IPv4 only\) shares no LAN family with eu-c, its location's leader \(LAN IPv6 only\): .*kilo\.squat\.ai\/leader/m,
  );
});

test('the reverse: an IPv6-only follower of an IPv4-only leader', () => {
  assert.deepEqual(planFor(cluster('eu-d'), 'eu-c', dual()).cutOff, [
    { node: 'eu-c', leader: 'eu-d', nodeFamilies: [6], leaderFamilies: [4] },
  ]);
});

test('a dual-stack leader reaches both: nothing cut off, no field in the plan', () => {
  for (const name of ['eu-a', 'eu-c', 'eu-d']) {
    const plan = planFor(cluster('eu-a'), name, dual());
    assert.equal(plan.segment.leader, 'eu-a');
    assert.ok(!('cutOff' in plan), `${name}: ${JSON.stringify(plan.cutOff)}`);
    assert.doesNotMatch(renderPlanText(plan), /warning/);
  }
  // Its follower's routes go to it over the family each shares with it.
  const lines = routeLines(planFor(cluster('eu-a'), 'eu-d', dual()));
  assert.ok(
    lines.some((l) => l.startsWith('10.2.81.0/24 via 10.1.0.1 ')),
    lines.join('\n'),
  );
});

test('a follower reaching its leader through the CNI (flannel) is not judged by the LAN', () => {
  const plan = planFor(cluster('eu-c'), 'eu-d', dual({ compatibility: 'flannel' }));
  assert.ok(!('cutOff' in plan));
  assert.ok(routeLines(plan).length > 0);
});

test('outside location granularity a segment is one node: nothing cut off', () => {
  for (const granularity of ['full', 'cross', 'subnet'] as const)
    assert.ok(!('cutOff' in planFor(cluster('eu-c', false), 'eu-d', dual({ granularity }))), granularity);
});
