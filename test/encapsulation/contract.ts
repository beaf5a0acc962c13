/**
 * The contract every encapsulation (src/encapsulation/) keeps, whatever it is: the plan's answers
 * are addresses of the node asked about and agree with the plan made from them; the machine's
 * answers name devices that exist and are up, do not change when asked again, and clean-up leaves
 * the kernel's and the CNI's devices in place.
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import type { Host } from '../../src/host/host.js';
import type { Encapsulator } from '../../src/encapsulation/index.js';
import { encapsulationOf } from '../../src/encapsulation/index.js';
import type { MeshOptions } from '../../src/mesh/options.js';
import type { KiloNode } from '../../src/model/types.js';
import type { IP } from '../../src/net/cidr.js';
import { Annotation } from '../../src/model/annotations.js';
import { kiloNode, planFor, twoLocations } from '../helpers/cluster.js';

/** A host to set an encapsulation up on: a network namespace, or the fake Host over a FakeKernel. */
export interface TestHost {
  host: Host;
  /** A device a CNI would make (a stand-in): down, or up with `address`. */
  standIn(name: string, address?: string): void;
  /** The names of its interfaces, sorted. */
  links(): string[];
}

export interface EncapsulationCase {
  /** What the flags say. */
  options: Pick<MeshOptions, 'encapsulate' | 'local'> & Partial<Pick<MeshOptions, 'compatibility'>>;
  name: Encapsulator['name'];
  /** The devices the CNI (or the kernel) would have made on the host, as stand-ins. */
  standIns: (m: TestHost) => void;
  /** The devices setUp must name on that host (the tunnel may be null on a kernel without ipip). */
  devices: (m: TestHost) => { tunnel: string | null; private?: string };
  /** The address it publishes on that host. */
  ownAddress: string | null;
}

const self = kiloNode('self', { location: 'eu', internalIP: '10.1.0.1/24' });
const mates: KiloNode[] = [
  kiloNode('near', { location: 'eu', internalIP: '10.1.0.2/24', podCIDR: '10.2.2.0/24' }),
  kiloNode('far', { location: 'eu', internalIP: '10.9.0.3/24', podCIDR: '10.2.3.0/24' }),
  kiloNode('cilium', {
    location: 'eu',
    internalIP: '10.1.0.4/24',
    podCIDR: '10.2.4.0/24',
    annotations: { [Annotation.ciliumInternalIP]: '10.2.4.180' },
  }),
];

/** Whether `ip` belongs to node `n`: its internal IP, its Cilium internal IP, or in its pod CIDR. */
function isAddressOf(n: KiloNode, ip: IP): boolean {
  return (
    n.internalIPs.some((c) => c.ip.equals(ip)) ||
    !!n.ciliumInternalIP?.equals(ip) ||
    n.podCIDRs.some((c) => c.contains(ip))
  );
}

export async function encapsulationContract(t: TestContext, c: EncapsulationCase, m: TestHost | null) {
  const { encapsulator: enc, device } = encapsulationOf(c.options);

  await t.test(`${c.name}: picked by the flags`, () => assert.equal(enc.name, c.name));

  await t.test(`${c.name}: gateways are addresses of the node asked about`, () => {
    for (const n of mates) {
      assert.ok(isAddressOf(n, enc.mateGateway(n)), `${n.name}: mate gateway ${enc.mateGateway(n).text}`);
      assert.ok(isAddressOf(n, enc.segmentGateway(n)), `${n.name}: segment gateway ${enc.segmentGateway(n).text}`);
    }
  });

  await t.test(`${c.name}: nothing is encapsulated under --encapsulate=never; IPIP is accepted only from mates`, () => {
    for (const n of mates) {
      const dev = enc.deviceTo(self, enc.mateGateway(n));
      if (c.options.encapsulate === 'never') assert.equal(dev, 'private');
      const sources = enc.ipipSourcesOf(n);
      if (!enc.acceptsIPIP) continue;
      assert.ok(sources.length > 0, `${n.name}: some source accepted`);
      for (const s of sources) assert.ok(s.prefix === 32 && isAddressOf(n, s.ip), `${n.name}: ${s.networkText}`);
    }
    if (c.options.encapsulate === 'never') assert.equal(enc.acceptsIPIP, false);
  });

  await t.test(`${c.name}: the plan made with it agrees with its answers`, () => {
    for (const host of ['eu-a', 'eu-b']) {
      const plan = planFor(twoLocations(), host, { granularity: 'location', ...c.options });
      const ipipPolicy = plan.firewall.ipip !== null;
      assert.equal(ipipPolicy, enc.acceptsIPIP, `${host}: an IPIP accept list planned`);
      const tunnel = plan.routes.filter((r) => r.dev === 'tunnel');
      if (c.options.encapsulate === 'never' || c.name === 'flannel' || c.name === 'none')
        assert.deepEqual(tunnel, [], `${host}: nothing through a tunnel`);
    }
  });

  if (m === null) return;
  await t.test(`${c.name}: on a host, setUp names devices that exist and are up, and says the same again`, async () => {
    c.standIns(m);
    const devices = await device.setUp(m.host);
    assert.deepEqual(devices, c.devices(m));
    for (const dev of [devices.tunnel, devices.private]) {
      if (dev === null || dev === undefined) continue;
      const link = await m.host.link(dev);
      assert.ok(link, `${dev} exists`);
      if (dev === devices.tunnel) assert.ok(link.up, `${dev} is up`);
    }
    assert.deepEqual(await device.setUp(m.host), devices);
    assert.equal((await device.ownAddress(m.host))?.text ?? null, c.ownAddress);
  });

  await t.test(`${c.name}: clean-up leaves the kernel's and the CNI's devices`, async () => {
    const before = m.links();
    await device.cleanUp(m.host);
    assert.deepEqual(m.links(), before);
  });
}
