/** Every encapsulation through one contract (./contract.ts); on a real machine in a network namespace. */
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { createNamespace, skipNoNetns, type TestNamespace } from '../helpers/netns.js';
import { encapsulationContract, type EncapsulationCase } from './contract.js';

const hasLink = (ns: TestNamespace, dev: string) =>
  spawnSync('ip', ['-n', ns.name, 'link', 'show', 'dev', dev]).status === 0;
/** The kernel's tunl0 exists only with the ipip module (absent on these CI machines). */
const tunl0 = (ns: TestNamespace) => (hasLink(ns, 'tunl0') ? 'tunl0' : null);
/** A stand-in for a device the CNI makes: a veth end of that name, down, its peer up. */
const standIn = (ns: TestNamespace, name: string, address?: string) =>
  ns.sh(
    `ip link add ${name} type veth peer name ${name}p && ip link set ${name}p up` +
      (address ? ` && ip addr add ${address} dev ${name} && ip link set ${name} up` : ''),
  );
const cilium = (ns: TestNamespace) => {
  standIn(ns, 'cilium_host', '10.42.2.180/32');
  standIn(ns, 'cilium_tunl');
};

const cases: EncapsulationCase[] = [
  {
    name: 'none',
    options: { encapsulate: 'never', local: true },
    machine: () => {},
    devices: () => ({ tunnel: null }),
    ownAddress: null,
  },
  {
    name: 'ipip',
    options: { encapsulate: 'always', local: true },
    machine: () => {},
    devices: (ns) => ({ tunnel: tunl0(ns) }),
    ownAddress: null,
  },
  {
    name: 'ipip',
    options: { encapsulate: 'crosssubnet', local: false },
    machine: () => {},
    devices: (ns) => ({ tunnel: tunl0(ns) }),
    ownAddress: null,
  },
  {
    name: 'flannel',
    options: { compatibility: 'flannel', encapsulate: 'always', local: false },
    machine: (ns) => standIn(ns, 'flannel.1'),
    devices: () => ({ tunnel: null, private: 'flannel.1' }),
    ownAddress: null,
  },
  {
    name: 'cilium',
    options: { compatibility: 'cilium', encapsulate: 'crosssubnet', local: false },
    machine: cilium,
    devices: () => ({ tunnel: 'cilium_tunl' }),
    ownAddress: '10.42.2.180',
  },
  {
    name: 'cilium',
    options: { compatibility: 'cilium', encapsulate: 'never', local: false },
    machine: cilium,
    devices: () => ({ tunnel: null }),
    ownAddress: '10.42.2.180',
  },
];

for (const c of cases) {
  const flags = `--encapsulate=${c.options.encapsulate} --local=${c.options.local}${c.options.compatibility ? ` --compatibility=${c.options.compatibility}` : ''}`;
  test(`encapsulation ${c.name} (${flags})`, async (t) => {
    const ns = skipNoNetns ? null : createNamespace('kt-enc');
    t.after(() => ns?.destroy());
    await encapsulationContract(t, c, ns);
  });
}
