import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import type { Exec } from '../../src/dataplane/exec.js';
import { LinuxFirewallTables, type IptablesBackend } from '../../src/dataplane/iptables/tables.js';
import { createNamespace, skipNoNetns } from '../helpers/netns.js';
import { countingWrites, firewallContract, iptablesView, type IptablesAccess } from './firewall-contract.js';

/** Counts restore processes that could write (dry runs with --test cannot). */
const counting = (exec: Exec) =>
  countingWrites(exec, (argv) => /restore$/.test(argv[0] ?? '') && !argv.includes('--test'));

/**
 * Whether iptables-legacy works here, asked in a namespace of its own: a legacy table, once
 * touched, stays in its namespace for good, and in the host's it makes every later `iptables` warn
 * "iptables-legacy tables present".
 */
function legacyWorks(): boolean {
  if (skipNoNetns) return false;
  const ns = createNamespace('ktlg');
  try {
    return spawnSync('ip', ['netns', 'exec', ns.name, 'iptables-legacy-save', '-t', 'nat']).status === 0;
  } finally {
    ns.destroy();
  }
}

/** The legacy tables of this (the host's) namespace: the tests must add none. */
const hostLegacyTables = () =>
  ['/proc/net/ip_tables_names', '/proc/net/ip6_tables_names'].map((f) =>
    existsSync(f) ? readFileSync(f, 'utf8') : '',
  );
const hostTablesBefore = hostLegacyTables();

/** The machine's default backend (what `iptables -V` names), and the other one when the kernel has it. */
const backends: { backend: IptablesBackend | undefined; skip: string | false }[] = [
  { backend: undefined, skip: skipNoNetns },
  { backend: 'legacy', skip: skipNoNetns || (legacyWorks() ? false : 'iptables-legacy does not work here') },
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
        const { exec, runs: restoreRuns } = counting(ns.exec);
        const ipt: IptablesAccess = {
          save: async (family, table) => (await ns.exec.run([tool(family, 'save'), '-t', table])).stdout,
          iptables: async (family, args) => void (await ns.exec.run([tool(family), '-w', ...args])),
        };
        return {
          tables: new LinuxFirewallTables(exec, backend ? { backend } : {}),
          view: iptablesView(ipt),
          iptables: ipt,
          batchesPerChange: 2,
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

test('the legacy tables stay in the test namespaces: the host namespace gains none', () => {
  assert.deepEqual(hostLegacyTables(), hostTablesBefore);
});
