/**
 * squat/kilo#393: three masters in one location, one of them showing the location's WireGuard IP on
 * a second kilo0 (down, the address kept) after leadership moved, and traffic to the other location
 * lost. The same conditions against kilo-ts, with either allocation rule: a change of leader, a
 * master that stops checking in and comes back, a location joining that sorts first, and two agents
 * that have not seen the same objects yet.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { planNode } from '../../src/mesh/plan.js';
import { diffLink } from '../../src/dataplane/links.js';
import { meshOptions, NOW, type NodeSpec } from '../helpers/cluster.js';
import { addressMap, published, ready, topologyOfSpecs, type Specs } from '../helpers/allocation.js';

function masters(): Map<string, NodeSpec> {
  return new Map([
    ['master-cluster-vm1', ready('master', { leader: true })],
    ['master-cluster-vm2', ready('master')],
    ['master-cluster-vm3', ready('master')],
    ['worker-1', ready('workers')],
    ['worker-2', ready('workers')],
  ]);
}

/** Each ready node's interface address as its own plan has it (null: a follower, link down). */
function interfaces(specs: Specs, options: object): Map<string, string | null> {
  const out = new Map<string, string | null>();
  for (const [name, spec] of specs) {
    if (spec.lastSeen !== undefined) continue;
    const t = topologyOfSpecs(specs, name, options);
    const plan = planNode(t, meshOptions(options));
    assert.equal(plan.interfaceUp, plan.wireGuardIP !== null, `${name}: an address on a link that is down`);
    out.set(name, plan.wireGuardIP);
  }
  return out;
}

/** No address on two interfaces, and each location's leader holds what every node routes to. */
function assertNoDuplicate(specs: Specs, options: object): void {
  const held = [...interfaces(specs, options)].filter(([, a]) => a !== null);
  const addresses = held.map(([, a]) => a);
  assert.equal(new Set(addresses).size, addresses.length, `one address on two interfaces: ${JSON.stringify(held)}`);
  for (const [name] of specs) {
    if (specs.get(name)!.lastSeen !== undefined) continue;
    const t = topologyOfSpecs(specs, name, options);
    for (const s of t.segments) {
      const own = held.find(([n]) => n === s.leader.name)?.[1];
      assert.equal(own, `${s.wireGuardIPs[0]!.text}/16`, `${name} routes ${s.key} to an address its leader lacks`);
    }
  }
}

for (const mode of ['kilo', 'stable'] as const) {
  describe(`squat/kilo#393 (${mode})`, () => {
    const options = { wireGuardIPAllocation: mode };

    test('a change of leader: only the new leader holds the address, the old one drops it and goes down', () => {
      let specs = masters();
      assertNoDuplicate(specs, options);
      specs = published(specs, topologyOfSpecs(specs, 'worker-1', options));
      const before = addressMap(topologyOfSpecs(specs, 'worker-1', options)).get('location:master')!;
      // Leadership moves to vm2 (the annotation moves), as in the report.
      specs.set('master-cluster-vm1', { ...specs.get('master-cluster-vm1')!, leader: false });
      specs.set('master-cluster-vm2', { ...specs.get('master-cluster-vm2')!, leader: true });
      assertNoDuplicate(specs, options);
      const t = topologyOfSpecs(specs, 'master-cluster-vm1', options);
      assert.equal(t.local.segment.leader.name, 'master-cluster-vm2');
      assert.equal(addressMap(t).get('location:master'), before);
      // The former leader's kilo0 still has the address (up): the plan takes it away and the link down.
      const plan = planNode(t, meshOptions(options));
      assert.deepEqual(
        diffLink(
          { up: true, mtu: 1420, addresses: [`${before}/16`] },
          {
            address: plan.wireGuardIP,
            up: plan.interfaceUp,
            mtu: null,
          },
        ),
        [{ kind: 'down' }, { kind: 'address', action: 'del', address: `${before}/16` }],
      );
    });

    test('the leader stops checking in and comes back; a location that sorts first joins: never one address twice', () => {
      let specs = masters();
      specs = published(specs, topologyOfSpecs(specs, 'worker-1', options));
      specs.set('master-cluster-vm1', { ...specs.get('master-cluster-vm1')!, lastSeen: NOW - 300 });
      assertNoDuplicate(specs, options);
      specs = published(specs, topologyOfSpecs(specs, 'worker-1', options));
      specs.set('a-edge', ready('a-edge'));
      assertNoDuplicate(specs, options);
      specs = published(specs, topologyOfSpecs(specs, 'worker-1', options));
      specs.set('master-cluster-vm1', { ...specs.get('master-cluster-vm1')!, lastSeen: undefined });
      assertNoDuplicate(specs, options);
    });

    test('two agents that have not seen the same objects yet', () => {
      let specs = masters();
      specs = published(specs, topologyOfSpecs(specs, 'worker-1', options));
      const late = new Map(specs);
      specs.set('a-edge', ready('a-edge'));
      // vm2 has seen the new location, worker-1 not yet.
      const seen = addressMap(topologyOfSpecs(specs, 'master-cluster-vm2', options));
      const notYet = addressMap(topologyOfSpecs(late, 'worker-1', options));
      const agree = [...notYet].every(([k, a]) => seen.get(k) === a);
      // Kilo's rule shifts every location after the new one, so until every agent has seen it they
      // disagree (routes to a peer's old address: Kilo's #221 and the loss in #393); stable never moves one.
      assert.equal(agree, mode === 'stable');
    });
  });
}
