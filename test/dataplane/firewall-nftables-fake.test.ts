import { createFakeNftables } from '../../src/dataplane/nftables/fake.js';
import { firewallContract, type IptablesAccess } from './firewall-contract.js';
import { nftablesView } from './firewall-nftables-view.js';

firewallContract(
  'nftables over an in-memory nftables and iptables',
  () => {
    const { tables, nft, iptables, exec } = createFakeNftables();
    const ipt: IptablesAccess = {
      save: (family, table) => Promise.resolve(iptables.save(family, table)),
      iptables: async (family, args) => void (await exec.run([family === 6 ? 'ip6tables' : 'iptables', ...args])),
    };
    // Writes by the backend only: the view's planting goes through the same fake, so count before it.
    let planted = 0;
    const counted = {
      ...exec,
      run: (argv: readonly string[], opts?: { input?: string }) => {
        if (argv[0] === 'nft' && argv[1] === '-f') planted++;
        return exec.run(argv, opts);
      },
    };
    return {
      tables,
      view: nftablesView(counted, ipt),
      batchesPerChange: 1,
      restoreRuns: () => nft.scriptRuns() - planted + iptables.restoreRuns(),
      destroy: () => {},
    };
  },
  false,
  'nftables',
);
