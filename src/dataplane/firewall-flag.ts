/**
 * The values of `--firewall`, apart from the backends themselves: kgctl's flag parser reads them,
 * and it must not load what runs commands (node:child_process) to start.
 */
export const firewallFlags = ['auto', 'iptables', 'nftables'] as const;
export type FirewallFlag = (typeof firewallFlags)[number];
export type FirewallBackend = Exclude<FirewallFlag, 'auto'>;
