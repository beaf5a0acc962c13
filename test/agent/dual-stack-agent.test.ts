/**
 * What a dual-stack agent publishes and writes: the -ipv6 annotations beside Kilo's (and nothing
 * new in a one-family mesh), IPv6 discovered endpoints apart, the IPv6 addresses it detects, and a
 * CNI conflist with one range set per family.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { cniSubnetsOf, syncCNIConfig } from '../../src/agent/cni.js';
import { chooseAddresses, chooseIPv6Beside, type DiscoveryOptions } from '../../src/agent/discovery.js';
import { annotationPatch, type LocalFacts } from '../../src/agent/local-node.js';
import type { HostAddress } from '../../src/host/host.js';
import { Annotation } from '../../src/model/annotations.js';
import { Cidr, IP } from '../../src/net/cidr.js';
import { NOW } from '../helpers/cluster.js';

const facts: LocalFacts = {
  publicKey: 'k',
  endpoint: '198.18.1.11:51820',
  internalIP: Cidr.parse('192.168.1.11/24'),
  wireGuardIP: '10.4.0.1/16',
  granularity: 'full',
  discoveredEndpoints: new Map([
    ['four=', { ip: IP.parse('198.18.2.1'), dns: null, port: 1024 }],
    ['six=', { ip: IP.parse('2001:db8::7'), dns: null, port: 1025 }],
  ]),
  now: NOW,
};
const ipv6 = { internalIP: Cidr.parse('fd10::11/64'), endpoint: '[2001:db8::11]:51820', wireGuardIP: 'fd4b::1/64' };

test('one family: no -ipv6 annotation, and the discovered endpoints as before', () => {
  const patch = annotationPatch({}, facts)!;
  assert.ok(!Object.keys(patch).some((k) => k.endsWith('-ipv6')), Object.keys(patch).join(' '));
  assert.ok(patch[Annotation.discoveredEndpoints]!.includes('2001:db8::7'));
});

test("dual-stack: the IPv6 values beside Kilo's, IPv6 discovered endpoints apart", () => {
  const patch = annotationPatch({}, { ...facts, ipv6 })!;
  assert.equal(patch[Annotation.internalIP], '192.168.1.11/24');
  assert.equal(patch[Annotation.internalIPv6], 'fd10::11/64');
  assert.equal(patch[Annotation.endpointIPv6], '[2001:db8::11]:51820');
  assert.equal(patch[Annotation.wireGuardIP], '10.4.0.1/16');
  assert.equal(patch[Annotation.wireGuardIPv6], 'fd4b::1/64');
  assert.equal(patch[Annotation.discoveredEndpoints], '{"four=":{"IP":"198.18.2.1","Port":1024,"Zone":""}}');
  assert.equal(patch[Annotation.discoveredEndpointsIPv6], '{"six=":{"IP":"2001:db8::7","Port":1025,"Zone":""}}');
  // The IPv6 endpoint, once set, is the operator's, as Kilo's.
  const again = annotationPatch({ [Annotation.endpointIPv6]: '[2001:db8::99]:51820' }, { ...facts, ipv6 })!;
  assert.equal(again[Annotation.endpointIPv6], undefined);
});

test('detection: per family, private = RFC 1918, 100.64/10, fc00::/7; link-local never', () => {
  const at = (iface: string, cidr: string): HostAddress => ({ iface, address: Cidr.parse(cidr) });
  const o: DiscoveryOptions = {
    excludeInterfaces: ['kilo0'],
    excludeCIDRs: [Cidr.parse('10.4.0.0/16'), Cidr.parse('fd4b::/64')],
    internalCIDRs: [],
    prioritisePrivate: false,
    defaultInterface: 'eth0',
  };
  const addresses = [
    at('eth0', 'fe80::1/64'),
    at('eth0', '169.254.0.9/16'),
    at('eth0', '100.64.3.4/10'),
    at('eth0', '203.0.113.4/24'),
    at('eth0', '2001:db8::4/64'),
    at('eth0', 'fc00:1::4/64'),
  ];
  const kilo = chooseAddresses(addresses, o);
  assert.equal(kilo.internalIP?.toString(), '100.64.3.4/10');
  assert.equal(kilo.endpointIP?.toString(), '203.0.113.4/24');
  const six = chooseIPv6Beside(addresses, o, kilo);
  assert.equal(six.internalIP?.toString(), 'fc00:1::4/64');
  assert.equal(six.endpointIP?.toString(), '2001:db8::4/64');
  // An IPv6-only host: Kilo's values are IPv6 already, nothing beside them.
  const only6 = addresses.filter((a) => a.address.family === 6);
  assert.deepEqual(chooseIPv6Beside(only6, o, chooseAddresses(only6, o)), { internalIP: null, endpointIP: null });
});

test('the CNI conflist gets one range set per family, and is left alone when it has them', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kilo-cni-dual-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, '10-kilo.conflist');
  writeFileSync(
    file,
    JSON.stringify({ cniVersion: '0.3.1', name: 'kilo', plugins: [{ type: 'bridge', ipam: { type: 'host-local' } }] }),
  );
  const pods = [Cidr.parse('10.42.3.0/24'), Cidr.parse('fd42:3::/64')];
  assert.deepEqual(await syncCNIConfig(file, pods), { status: 'updated', from: null, to: '10.42.3.0/24,fd42:3::/64' });
  const conf = JSON.parse(readFileSync(file, 'utf8')) as { plugins: { ipam: { ranges: unknown } }[] };
  assert.deepEqual(conf.plugins[0]!.ipam.ranges, [[{ subnet: '10.42.3.0/24' }], [{ subnet: 'fd42:3::/64' }]]);
  assert.deepEqual(cniSubnetsOf(conf), ['10.42.3.0/24', 'fd42:3::/64']);
  assert.deepEqual(await syncCNIConfig(file, pods), { status: 'unchanged' });
});
