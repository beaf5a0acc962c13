import type { Exec } from '../../src/dataplane/exec.js';
import { LinuxFirewallTables } from '../../src/dataplane/iptables/tables.js';
import { createNamespace, skipNoNetns } from '../helpers/netns.js';
import { firewallContract } from './firewall-contract.js';

/** Counts restore processes that could write (dry runs with --test cannot). */
function counting(exec: Exec): { exec: Exec; restoreRuns: () => number } {
  let runs = 0;
  return {
    exec: {
      ...exec,
      run: (argv, opts) => {
        if (/restore$/.test(argv[0] ?? '') && !argv.includes('--test')) runs++;
        return exec.run(argv, opts);
      },
    },
    restoreRuns: () => runs,
  };
}

firewallContract(
  'iptables in a network namespace',
  () => {
    const ns = createNamespace('ktfw');
    try {
      const { exec, restoreRuns } = counting(ns.exec);
      return {
        tables: new LinuxFirewallTables(exec),
        save: async (family, table) =>
          (await ns.exec.run([family === 6 ? 'ip6tables-save' : 'iptables-save', '-t', table])).stdout,
        iptables: async (family, args) =>
          void (await ns.exec.run([family === 6 ? 'ip6tables' : 'iptables', '-w', ...args])),
        restoreRuns,
        destroy: () => ns.destroy(),
      };
    } catch (e) {
      ns.destroy();
      throw e;
    }
  },
  skipNoNetns,
);
