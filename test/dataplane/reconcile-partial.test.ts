/**
 * reconcile() when a step applies only part of its changes: what was written still counts, and
 * the error says once which area failed and why, naming every object (here: routes that need an
 * IPIP tunnel this node does not have).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createFakeFirewall } from '../../src/dataplane/iptables/fake.js';
import { partialOf, reconcile, type Dataplane } from '../../src/dataplane/reconcile.js';
import { FakeLinks, FakeKernel, fakeRoutingTables } from '../../src/dataplane/routes/fake.js';
import { FakeWireGuardDevice } from '../../src/dataplane/wireguard/fake.js';
import { generatePrivateKey } from '../../src/wireguard/keys.js';
import { planFor, twoLocations } from '../helpers/cluster.js';

function dataplane(): { dp: Dataplane; kernel: FakeKernel } {
  const kernel = new FakeKernel();
  kernel.addLink('kilo0', { mtu: 1420, up: false });
  kernel.addLink('eth0', { addresses: ['10.1.0.1/24'] });
  const dp: Dataplane = {
    device: new FakeWireGuardDevice('kilo0'),
    links: new FakeLinks(kernel),
    routes: fakeRoutingTables(kernel),
    firewall: createFakeFirewall().tables,
  };
  return { dp, kernel };
}

test('routes that need a missing IPIP tunnel fail by name; the other routes are applied and counted', async () => {
  // eu-a leads location eu and encapsulates to eu-b and eu-c: those routes need tunl0.
  const plan = planFor(twoLocations(), 'eu-a', { granularity: 'location', encapsulate: 'always' });
  const tunnelRoutes = plan.routes.filter((r) => r.dev === 'tunnel');
  const otherRoutes = plan.routes.filter((r) => r.dev !== 'tunnel');
  assert.ok(tunnelRoutes.length > 0 && otherRoutes.length > 0 && plan.rules.length > 0);
  const { dp, kernel } = dataplane();

  const result = await reconcile(dp, {
    plan,
    privateKey: generatePrivateKey(),
    mtu: 1420,
    devices: { kilo: 'kilo0', private: 'eth0', tunnel: null },
  });

  assert.equal(result.errors.length, 1);
  const [error] = result.errors;
  assert.match(error!.message, /^routes: \d+ change\(s\) failed/, 'the area is named once');
  const failures = partialOf(error)?.failures ?? [];
  assert.equal(failures.length, tunnelRoutes.length, 'one failure per tunnel route');
  for (const f of failures) {
    assert.match(f.object, / dev tunnel/);
    assert.match(f.message, /IPIP tunnel .*no tunl0/);
  }

  const kiloRoutes = kernel.routes.filter((r) => r.protocol === 107).length;
  const kiloRules = kernel.rules.filter((r) => r.priority === 1107).length;
  const guard = plan.guard ?? [];
  assert.ok(guard.length > 0);
  assert.equal(
    kiloRoutes,
    otherRoutes.length + guard.length,
    'every route that needs no tunnel is installed, and the fail-closed guard',
  );
  assert.ok(kiloRules > 0, 'rules are installed');
  assert.equal(result.routes.writes, kiloRoutes + kiloRules, 'the writes that took effect are counted');
  assert.equal(result.routes.details.length, result.routes.writes);
  const wg = result.wireGuard;
  assert.equal(
    result.writes,
    result.links.writes +
      result.routes.writes +
      result.firewall.writes +
      wg.added.length +
      wg.removed.length +
      wg.updated.length,
  );
  assert.ok(result.firewall.writes > 0 && wg.added.length === plan.peers.length, 'the other steps ran');
});
