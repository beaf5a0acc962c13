/**
 * Every encapsulation through one contract (./contract.ts), on a real machine in a network
 * namespace and on the fake Host.
 */
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { FakeHost } from '../../src/dataplane/host/fake.js';
import { LinuxHost } from '../../src/dataplane/host/linux.js';
import { FakeKernel } from '../../src/dataplane/routes/fake.js';
import { createNamespace, skipNoNetns, type TestNamespace } from '../helpers/netns.js';
import { encapsulationContract, type EncapsulationCase, type TestHost } from './contract.js';

/** A namespace; a CNI's device is a veth end of that name (its peer up). */
function namespaceHost(ns: TestNamespace): TestHost {
  return {
    host: new LinuxHost(ns.exec),
    standIn: (name, address) =>
      void ns.sh(
        `ip link add ${name} type veth peer name ${name}p && ip link set ${name}p up` +
          (address ? ` && ip addr add ${address} dev ${name} && ip link set ${name} up` : ''),
      ),
    links: () =>
      spawnSync('ip', ['-n', ns.name, '-o', 'link', 'show'], { encoding: 'utf8' })
        .stdout.split('\n')
        .filter(Boolean)
        .map((l) => l.split(':')[1]!.trim())
        .sort(),
  };
}

/** The fake Host; its kernel has the ipip module (tunl0 appears, down, when it is loaded). */
function fakeHost(): TestHost {
  const m = new FakeKernel();
  m.addLink('lo', { addresses: ['127.0.0.1/8'] });
  return {
    host: new FakeHost(m, { ipip: (kernel) => kernel.addLink('tunl0', { up: false }) }),
    standIn: (name, address) => m.addLink(name, { up: address !== undefined, addresses: address ? [address] : [] }),
    links: () => [...m.links.keys()].sort(),
  };
}

/** The kernel's tunl0 exists only with the ipip module (absent on these CI machines). */
const tunl0 = (m: TestHost) => (m.links().includes('tunl0') ? 'tunl0' : null);
const cilium = (m: TestHost) => {
  m.standIn('cilium_host', '10.42.2.180/32');
  m.standIn('cilium_tunl');
};

const cases: EncapsulationCase[] = [
  {
    name: 'none',
    options: { encapsulate: 'never', local: true },
    standIns: () => {},
    devices: () => ({ tunnel: null }),
    ownAddress: null,
  },
  {
    name: 'ipip',
    options: { encapsulate: 'always', local: true },
    standIns: () => {},
    devices: tunnel,
    ownAddress: null,
  },
  {
    name: 'ipip',
    options: { encapsulate: 'crosssubnet', local: false },
    standIns: () => {},
    devices: tunnel,
    ownAddress: null,
  },
  {
    name: 'flannel',
    options: { compatibility: 'flannel', encapsulate: 'always', local: false },
    standIns: (m) => m.standIn('flannel.1'),
    devices: () => ({ tunnel: null, private: 'flannel.1' }),
    ownAddress: null,
  },
  {
    name: 'cilium',
    options: { compatibility: 'cilium', encapsulate: 'crosssubnet', local: false },
    standIns: cilium,
    devices: () => ({ tunnel: 'cilium_tunl' }),
    ownAddress: '10.42.2.180',
  },
  {
    name: 'cilium',
    options: { compatibility: 'cilium', encapsulate: 'never', local: false },
    standIns: cilium,
    devices: () => ({ tunnel: null }),
    ownAddress: '10.42.2.180',
  },
];

function tunnel(m: TestHost) {
  return { tunnel: tunl0(m) };
}

for (const c of cases) {
  const flags = `--encapsulate=${c.options.encapsulate} --local=${c.options.local}${c.options.compatibility ? ` --compatibility=${c.options.compatibility}` : ''}`;
  test(`encapsulation ${c.name} (${flags}) in a network namespace`, async (t) => {
    const ns = skipNoNetns ? null : createNamespace('kt-enc');
    t.after(() => ns?.destroy());
    await encapsulationContract(t, c, ns ? namespaceHost(ns) : null);
  });
  test(`encapsulation ${c.name} (${flags}) on the fake Host`, (t) => encapsulationContract(t, c, fakeHost()));
}
