/** What the agent finds on the machine at start, read through the fake Host (the contract holds for both). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { interfaceHolding } from '../../src/agent/discovery.js';
import { discoverHost, resolveMTU } from '../../src/agent/startup.js';
import { FakeHost } from '../../src/dataplane/host/fake.js';
import { FakeKernel } from '../../src/dataplane/routes/fake.js';
import { UsageError } from '../../src/model/errors.js';
import { Cidr, IP } from '../../src/net/cidr.js';

/** lo; kilo0, tunl0 and cilium_host with private addresses of their own; eth0 (LAN, default route, MTU 1400); pub0 (public). */
function kernel(): FakeKernel {
  const m = new FakeKernel();
  m.addLink('lo', { addresses: ['127.0.0.1/8', '::1/128'] });
  m.addLink('kilo0', { addresses: ['10.4.0.1/16'] });
  m.addLink('tunl0', { addresses: ['192.168.9.1/32'] });
  m.addLink('cilium_host', { addresses: ['10.42.0.180/32'] });
  m.addLink('eth0', { mtu: 1400, addresses: ['192.168.0.1/24', 'fd00::1/64'] });
  m.addLink('pub0', { addresses: ['198.51.100.1/24'] });
  m.routeAdd({
    family: 4,
    dst: '0.0.0.0/0',
    table: 254,
    metric: 0,
    gw: '192.168.0.254',
    dev: 'eth0',
    src: null,
    onlink: false,
    type: 'unicast',
    protocol: 3,
  });
  return m;
}

const options = {
  interfaceName: 'kilo0',
  subnet: Cidr.parse('10.4.0.0/16'),
  internalCIDRs: [],
  prioritisePrivate: false,
};

test('discoverHost: the internal IP is private, the endpoint public; Kilo’s, the tunnel’s and the CNI’s devices are not candidates', async () => {
  const host = new FakeHost(kernel());
  const found = await discoverHost(host, options);
  assert.equal(found.internalIP?.toString(), '192.168.0.1/24');
  assert.equal(found.endpointIP?.text, '198.51.100.1');
  const privately = await discoverHost(host, { ...options, prioritisePrivate: true });
  assert.equal(privately.endpointIP?.text, '192.168.0.1');
});

test('discoverHost: the CNI bridge (kube-bridge, the pods’ gateway) is never the internal IP, also where it holds the only IPv4 address', async () => {
  // A node on an IPv6-only LAN and uplink whose pods have both families (kg lab --ipv6-only-location).
  const m = new FakeKernel();
  m.addLink('kube-bridge', { addresses: ['10.42.3.1/24', 'fd42:3::1/64'] });
  m.addLink('lan0', { addresses: ['fd10:3::11/64'] });
  m.addLink('pub0', { addresses: ['2001:db8:3::11/64'] });
  const found = await discoverHost(new FakeHost(m), {
    ...options,
    subnet: [Cidr.parse('10.4.0.0/16'), Cidr.parse('fd4b::/64')],
  });
  assert.equal(found.internalIP?.toString(), 'fd10:3::11/64');
  assert.equal(found.endpointIP?.text, '2001:db8:3::11');
});

test('interfaceHolding: the interface holding exactly the address (the private interface), else null', async () => {
  const addresses = await new FakeHost(kernel()).addresses();
  assert.equal(interfaceHolding(addresses, IP.parse('192.168.0.1')), 'eth0');
  assert.equal(interfaceHolding(addresses, IP.parse('fd00:0::1')), 'eth0');
  assert.equal(
    interfaceHolding(addresses, IP.parse('192.168.0.2')),
    null,
    'an address in the subnet is not the address',
  );
  assert.equal(interfaceHolding(addresses, IP.parse('127.0.0.1')), null, 'loopback addresses are not listed');
});

test('resolveMTU: --mtu auto is the default route’s MTU less WireGuard’s; a number is taken as it is', async () => {
  const host = new FakeHost(kernel());
  assert.equal(await resolveMTU(host, 'auto'), 1320);
  assert.equal(await resolveMTU(host, 1300), 1300);
  const bare = new FakeKernel();
  bare.addLink('eth0', { addresses: ['192.168.0.1/24'] });
  await assert.rejects(
    resolveMTU(new FakeHost(bare), 'auto'),
    (e: Error) => e instanceof UsageError && /no default route .* give --mtu a number/.test(e.message),
  );
});
