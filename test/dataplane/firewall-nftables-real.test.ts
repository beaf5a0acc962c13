import type { Exec } from '../../src/dataplane/exec.js';
import { LinuxNftablesTables } from '../../src/dataplane/nftables/tables.js';
import { createNamespace, skipNoNetns } from '../helpers/netns.js';
import { countingWrites, firewallContract, type IptablesAccess } from './firewall-contract.js';
import { nftablesView } from './firewall-nftables-view.js';

/** Counts the processes that could write: `nft -f` transactions and iptables restores (not dry runs). */
const counting = (exec: Exec) =>
  countingWrites(
    exec,
    (argv) => (argv[0] === 'nft' && argv[1] === '-f') || (/restore$/.test(argv[0] ?? '') && !argv.includes('--test')),
  );

firewallContract(
  'nftables in a network namespace',
  () => {
    const ns = createNamespace('ktnf');
    try {
      const { exec, runs: writes } = counting(ns.exec);
      const ipt: IptablesAccess = {
        save: async (family, table) =>
          (await ns.exec.run([family === 6 ? 'ip6tables-save' : 'iptables-save', '-t', table])).stdout,
        iptables: async (family, args) =>
          void (await ns.exec.run([family === 6 ? 'ip6tables' : 'iptables', '-w', ...args])),
      };
      return {
        tables: new LinuxNftablesTables(exec),
        view: nftablesView(ns.exec, ipt),
        batchesPerChange: 1,
        restoreRuns: writes,
        destroy: () => ns.destroy(),
      };
    } catch (e) {
      ns.destroy();
      throw e;
    }
  },
  skipNoNetns,
  'nftables',
);
