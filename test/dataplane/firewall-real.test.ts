import { spawnSync } from 'node:child_process';
import type { Exec } from '../../src/dataplane/exec.js';
import { LinuxFirewallTables, type IptablesBackend } from '../../src/dataplane/iptables/tables.js';
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

/** The machine's default backend (what `iptables -V` names), and the other one when the kernel has it. */
const legacyWorks = spawnSync('iptables-legacy-save', ['-t', 'nat']).status === 0;
const backends: { backend: IptablesBackend | undefined; skip: string | false }[] = [
  { backend: undefined, skip: skipNoNetns },
  { backend: 'legacy', skip: skipNoNetns || (legacyWorks ? false : 'iptables-legacy does not work here') },
];

for (const { backend, skip } of backends) {
  // Read back with the backend's own tools, so a rule written to the other backend would show as missing.
  const tool = (family: 4 | 6, kind = '') =>
    `${family === 6 ? 'ip6tables' : 'iptables'}${backend ? `-${backend}` : ''}${kind ? `-${kind}` : ''}`;
  firewallContract(
    `iptables (${backend ?? 'default backend'}) in a network namespace`,
    () => {
      const ns = createNamespace('ktfw');
      try {
        const { exec, restoreRuns } = counting(ns.exec);
        return {
          tables: new LinuxFirewallTables(exec, backend ? { backend } : {}),
          save: async (family, table) => (await ns.exec.run([tool(family, 'save'), '-t', table])).stdout,
          iptables: async (family, args) => void (await ns.exec.run([tool(family), '-w', ...args])),
          restoreRuns,
          destroy: () => ns.destroy(),
        };
      } catch (e) {
        ns.destroy();
        throw e;
      }
    },
    skip,
  );
}
