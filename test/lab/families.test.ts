/** `kg lab up --ip-family`: the IPv6 address plan, the agents' subnets, the ping targets, the flags' checks. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkFamilyFlags } from '../../packages/lab/src/family-flags.js';
import { labFamilies, podEndpointsOf, subnetFlags } from '../../packages/lab/src/lab-families.js';
import { clusterPlan, initialNodes, type LabOptions } from '../../packages/lab/src/layout.js';
import { UsageError } from '../../src/model/errors.js';
import { Cidr, IP } from '../../src/net/cidr.js';

const base: LabOptions = {
  locations: 3,
  nodesPerLocation: 2,
  granularity: 'cross',
  natLocation: 2,
  peer: true,
  prefix: 'kl-',
};

test('ipv4 (the default) is the lab as it was: no IPv6 anywhere, no --subnet', () => {
  assert.deepEqual(initialNodes({ ...base, ipFamily: 'ipv4' }), initialNodes(base));
  assert.ok(initialNodes(base).every((n) => n.ipv6 === undefined && n.ipv6Underlay === undefined));
  assert.deepEqual(subnetFlags(clusterPlan(1), undefined), []);
  assert.deepEqual(labFamilies(initialNodes(base)), [4]);
});

test('dual: every pod has both families; ULA LANs and pods are private, uplinks public; the IPv6-only location has no IPv4 underlay', () => {
  const nodes = initialNodes({ ...base, ipFamily: 'dual', ipv6OnlyLocation: 3 });
  for (const n of nodes) {
    const six = n.ipv6!;
    assert.ok(Cidr.parse(six.podCIDR).contains(IP.parse(six.podIP)), n.name);
    assert.equal(IP.parse(six.lanIP).isNonPublic(), true, `${n.name} LAN ${six.lanIP}`);
    assert.equal(IP.parse(six.podIP).isNonPublic(), true, `${n.name} pod ${six.podIP}`);
    assert.equal(IP.parse(six.publicIP).isNonPublic(), false, `${n.name} global ${six.publicIP}`);
    assert.equal(IP.parse(n.podIP).family, 4, `${n.name}: its pod keeps IPv4`);
  }
  for (const field of ['lanIP', 'publicIP', 'podCIDR'] as const)
    assert.equal(new Set(nodes.map((n) => n.ipv6![field])).size, nodes.length, field);
  const v6Only = nodes.filter((n) => n.ipv6Underlay);
  assert.deepEqual(
    v6Only.map((n) => n.name),
    ['loc3-n1', 'loc3-n2'],
  );
  for (const n of v6Only) {
    assert.equal(n.lanIP, n.ipv6!.lanIP);
    assert.equal(n.publicIP, n.ipv6!.publicIP);
  }
  assert.deepEqual(
    nodes.filter((n) => n.publicIP === null).map((n) => n.name),
    ['loc2-n1', 'loc2-n2'],
    'behind the NAT gateway',
  );
  assert.deepEqual(subnetFlags(clusterPlan(1), 'dual'), ['--subnet', '10.4.0.0/16,fd4b::/64']);
  assert.deepEqual(labFamilies(nodes), [4, 6]);
  const targets = podEndpointsOf(nodes.slice(0, 1));
  assert.deepEqual(
    targets.map((e) => `${e.name} ${e.ip} ${e.family}`),
    ['loc1-n1 10.42.1.2 4', 'loc1-n1/v6 fd42:1::2 6'],
  );
});

test('ipv6: pods, LANs and uplinks of IPv6 only, one ping target per pod', () => {
  const nodes = initialNodes({ ...base, ipFamily: 'ipv6' });
  for (const n of nodes) {
    for (const ip of [n.podIP, n.lanIP, ...(n.publicIP ? [n.publicIP] : [])]) assert.equal(IP.parse(ip).family, 6, ip);
    assert.equal(n.ipv6Underlay, true);
  }
  assert.deepEqual(subnetFlags(clusterPlan(1), 'ipv6'), ['--subnet', 'fd4b::/64']);
  assert.deepEqual(labFamilies(nodes), [6]);
  assert.equal(podEndpointsOf(nodes).length, nodes.length);
});

test('the flags of families: an IPv6-only location only in a dual lab, not behind the NAT, not past the last location', () => {
  const f = { ipFamily: 'dual' as const, locations: 3, clusters: 1, natLocation: 2 };
  checkFamilyFlags({ ...f, ipv6OnlyLocation: 3 });
  const refused = (o: Parameters<typeof checkFamilyFlags>[0], re: RegExp) =>
    assert.throws(
      () => checkFamilyFlags(o),
      (e: Error) => e instanceof UsageError && re.test(e.message),
    );
  refused({ ...f, ipFamily: 'ipv4', ipv6OnlyLocation: 3 }, /--ipv6-only-location 3: only with --ip-family dual/);
  refused({ ...f, ipv6OnlyLocation: 2 }, /--ipv6-only-location 2: it is the --nat-location too/);
  refused({ ...f, ipv6OnlyLocation: 4 }, /--ipv6-only-location 4: there are only 3 locations/);
  refused({ ...f, clusters: 2 }, /--clusters 2: only with --ip-family ipv4/);
});
