/**
 * The contract every encapsulation (src/encapsulation/) keeps, whatever it is: the plan's answers
 * are addresses of the node asked about and agree with the plan made from them; the machine's
 * answers name devices that exist and are up, do not change when asked again, and clean-up leaves
 * the kernel's and the CNI's devices in place.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import type { TestContext } from 'node:test';
import { LinuxHost } from '../../src/dataplane/host/linux.js';
import type { Encapsulator } from '../../src/encapsulation/index.js';
import { encapsulatorOf } from '../../src/encapsulation/index.js';
import type { MeshOptions } from '../../src/mesh/options.js';
import type { KiloNode } from '../../src/model/types.js';
import type { IP } from '../../src/net/cidr.js';
import { Annotation } from '../../src/model/annotations.js';
import { kiloNode, planFor, twoLocations } from '../helpers/cluster.js';
import type { TestNamespace } from '../helpers/netns.js';

export interface EncapsulationCase {
  /** What the flags say. */
  options: Pick<MeshOptions, 'encapsulate' | 'local'> & Partial<Pick<MeshOptions, 'compatibility'>>;
  name: Encapsulator['name'];
  /** The devices the CNI (or the kernel) would have made on the machine, as stand-ins. */
  machine: (ns: TestNamespace) => void;
  /** The devices setUp must name on that machine (the tunnel may be null on a kernel without ipip). */
  devices: (ns: TestNamespace) => { tunnel: string | null; private?: string };
  /** The address it publishes on that machine. */
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
  return Boolean(n.internalIP?.ip.equals(ip) || n.ciliumInternalIP?.equals(ip) || n.podCIDR?.contains(ip));
}

export async function encapsulationContract(t: TestContext, c: EncapsulationCase, ns: TestNamespace | null) {
  const enc = encapsulatorOf(c.options);

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
      const chain = plan.firewall.chains.some((ch) => ch.name === 'KILO-IPIP');
      assert.equal(chain, enc.acceptsIPIP, `${host}: KILO-IPIP planned`);
      const tunnel = plan.routes.filter((r) => r.dev === 'tunnel');
      if (c.options.encapsulate === 'never' || c.name === 'flannel' || c.name === 'none')
        assert.deepEqual(tunnel, [], `${host}: nothing through a tunnel`);
    }
  });

  if (ns === null) return;
  await t.test(
    `${c.name}: on a machine, setUp names devices that exist and are up, and says the same again`,
    async () => {
      c.machine(ns);
      const host = new LinuxHost(ns.exec);
      const devices = await enc.setUp(host);
      assert.deepEqual(devices, c.devices(ns));
      for (const dev of [devices.tunnel, devices.private]) {
        if (dev === null || dev === undefined) continue;
        const link = JSON.parse(ns.sh(`ip -j link show dev ${dev}`)) as { flags: string[] }[];
        if (dev === devices.tunnel) assert.ok(link[0]!.flags.includes('UP'), `${dev} is up`);
      }
      assert.deepEqual(await enc.setUp(host), devices);
      assert.equal((await enc.ownAddress(host))?.text ?? null, c.ownAddress);
    },
  );

  await t.test(`${c.name}: clean-up leaves the kernel's and the CNI's devices`, async () => {
    const before = links(ns);
    await enc.cleanUp(new LinuxHost(ns.exec));
    assert.deepEqual(links(ns), before);
  });
}

function links(ns: TestNamespace): string[] {
  const r = spawnSync('ip', ['-n', ns.name, '-o', 'link', 'show'], { encoding: 'utf8' });
  return r.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split(':')[1]!.trim())
    .sort();
}
