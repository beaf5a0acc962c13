import { createFakeFirewall } from '../../src/dataplane/iptables/fake.js';
import { firewallContract } from './firewall-contract.js';

firewallContract('in-memory netfilter', () => {
  const { tables, netfilter } = createFakeFirewall();
  const exec = netfilter.exec();
  return {
    tables,
    save: (family, table) => Promise.resolve(netfilter.save(family, table)),
    iptables: async (family, args) => void (await exec.run([family === 6 ? 'ip6tables' : 'iptables', ...args])),
    restoreRuns: () => netfilter.restoreRuns(),
    destroy: () => {},
  };
});
