/**
 * The Lease election's data-path probes and the per-pair health probes over either family: a pair
 * of nodes on IPv6-only underlays is probed over IPv6 (their IPv4 pods have no route in the clear
 * between them), one family is probed as before, and forwarding is checked per family.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { pathTargets } from '../../src/agent/health-targets.js';
import { FakeHost } from '../../src/dataplane/host/fake.js';
import { FakeKernel } from '../../src/dataplane/routes/fake.js';
import { DataPathHealth } from '../../src/election/health.js';
import { forwardingProbes, probeTargets } from '../../src/election/probes.js';
import { relayTargets } from '../../src/election/relay.js';
import { topologyOf } from '../../src/mesh/compute.js';
import type { ElectedLeaders } from '../../src/mesh/leaders.js';
import type { Topology } from '../../src/mesh/topology.js';
import { Annotation } from '../../src/model/annotations.js';
import { Cidr } from '../../src/net/cidr.js';
import { NOW, meshOptions, node, parsed } from '../helpers/cluster.js';

const subnets = [Cidr.parse('10.4.0.0/16'), Cidr.parse('fd4b::/64')];

/** A node with pods of both families, on a dual-stack, IPv4-only or IPv6-only underlay. */
function member(name: string, location: string, i: number, underlay: 'dual' | 4 | 6) {
  const lan = location === 'eu' ? 1 : 2;
  return node(name, {
    location,
    internalIP: underlay === 6 ? `fd10:${lan}::${i}/64` : `10.${lan}.0.${i}/24`,
    endpoint: underlay === 6 ? `[2001:db8:${lan}::${i}]:51820` : `198.51.100.${lan * 10 + i}:51820`,
    podCIDRs: [`10.42.${lan * 10 + i}.0/24`, `fd42:${lan * 10 + i}::/64`],
    annotations:
      underlay === 'dual'
        ? {
            [Annotation.internalIPv6]: `fd10:${lan}::${i}/64`,
            [Annotation.endpointIPv6]: `[2001:db8:${lan}::${i}]:51820`,
          }
        : {},
  });
}

/** eu: a dual-stack leader and an IPv6-only follower; us: an IPv6-only leader and follower. */
const cluster = () =>
  parsed([
    member('eu-a', 'eu', 1, 'dual'),
    member('eu-b', 'eu', 2, 6),
    member('us-a', 'us', 1, 6),
    member('us-b', 'us', 2, 6),
  ]);
const leases: ElectedLeaders = new Map([
  ['eu', { node: 'eu-a', reason: 'lease' as const }],
  ['us', { node: 'us-a', reason: 'lease' as const }],
]);
const dual = meshOptions({ granularity: 'location', subnet: subnets[0]!, subnets });
const view = (host: string): Topology => topologyOf(cluster(), host, dual, NOW, leases);
const addresses = (targets: readonly { node: string; address: string }[]) =>
  Object.fromEntries(targets.map((p) => [p.node, p.address]));

describe('probes of a dual-stack mesh', () => {
  test('an IPv6-only leader probes its IPv6-only follower and the remote leader over IPv6', () => {
    const t = view('us-a');
    assert.ok(t.local.leader);
    assert.deepEqual(addresses(probeTargets(t)), { 'us-b': 'fd42:22::1', 'eu-a': 'fd42:11::1' });
    // The per-pair health pings the same addresses: one packet for both (health-prober.ts).
    assert.deepEqual(addresses(pathTargets(t)), { 'us-b': 'fd42:22::1', 'eu-a': 'fd42:11::1' });
    assert.deepEqual(forwardingProbes(t), [{ from: 'fd42:11::1', to: 'fd42:22::1' }]);
  });

  test('an IPv6-only follower probes its mates and, through its leader, the remote leaders over IPv6', () => {
    const t = view('us-b');
    assert.deepEqual(addresses(pathTargets(t)), { 'us-a': 'fd42:21::1' });
    assert.deepEqual(addresses(relayTargets(t)), { 'eu-a': 'fd42:11::1' });
  });

  test('a dual-stack leader: IPv6 to its IPv6-only follower, IPv4 (as before) through WireGuard', () => {
    const t = view('eu-a');
    assert.deepEqual(addresses(probeTargets(t)), { 'eu-b': 'fd42:12::1', 'us-a': '10.42.21.1' });
    // No family with both ends: no forwarding probe rather than one of two families, which `ip route get` refuses.
    assert.deepEqual(forwardingProbes(t), []);
  });

  test('one family: the first address of the pod CIDR, as before', () => {
    const one = parsed([
      node('a', { location: 'eu', internalIP: '10.1.0.1/24', endpoint: '198.51.100.1:1', podCIDR: '10.42.1.0/24' }),
      node('b', { location: 'eu', internalIP: '10.1.0.2/24', endpoint: '198.51.100.2:1', podCIDR: '10.42.2.0/24' }),
      node('c', { location: 'us', internalIP: 'fd10::3/64', endpoint: '[2001:db8::3]:1', podCIDR: 'fd42:3::/64' }),
    ]);
    const t = topologyOf(one, 'a', meshOptions({ granularity: 'location' }), NOW);
    assert.deepEqual(addresses(probeTargets(t)), { b: '10.42.2.1', c: 'fd42:3::1' });
    assert.deepEqual(forwardingProbes(t), []);
  });
});

describe('the election pings over IPv6 and checks IPv6 forwarding', () => {
  const observer = { probed: () => {}, forwarding: () => {} };

  test('the leader of IPv6-only nodes pings only IPv6 addresses', async () => {
    const host = new FakeHost(new FakeKernel());
    const pinged: string[] = [];
    host.answers = (a) => (pinged.push(a), true);
    const health = new DataPathHealth(host, { failuresToResign: 1, interfaceName: 'kilo0' }, observer);
    await health.round(view('us-a'));
    assert.deepEqual(pinged.sort(), ['fd42:11::1', 'fd42:22::1']);
  });

  test('a node whose pods have IPv6 may not lead while IPv6 forwarding is off; IPv4 alone as before', async () => {
    const host = new FakeHost(new FakeKernel());
    host.forwarding6 = false;
    const health = new DataPathHealth(host, { failuresToResign: 1, interfaceName: 'kilo0' }, observer);
    assert.equal(await health.round(view('us-b')), 'IPv6 forwarding is off');
    assert.equal(await health.round(null), null, 'without a topology: IPv4 only, which is on');
    host.forwarding = false;
    assert.equal(await health.round(null), 'IPv4 forwarding is off');
  });
});
