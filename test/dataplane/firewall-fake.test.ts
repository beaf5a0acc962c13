import { createFakeFirewall } from '../../src/dataplane/iptables/fake.js';
import { firewallContract, iptablesView, type IptablesAccess } from './firewall-contract.js';

firewallContract('in-memory netfilter', () => {
  const { tables, netfilter } = createFakeFirewall();
  const exec = netfilter.exec();
  const ipt: IptablesAccess = {
    save: (family, table) => Promise.resolve(netfilter.save(family, table)),
    iptables: async (family, args) => void (await exec.run([family === 6 ? 'ip6tables' : 'iptables', ...args])),
  };
  return {
    tables,
    view: iptablesView(ipt),
    iptables: ipt,
    batchesPerChange: 2,
    restoreRuns: () => netfilter.restoreRuns(),
    destroy: () => {},
  };
});
