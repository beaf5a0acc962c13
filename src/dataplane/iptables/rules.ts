import type { Firewall, IPFamily, MasqueradeExceptionReason } from '../../mesh/types.js';

/**
 * The iptables rendering of the plan's firewall intent (src/mesh/firewall-types.ts): Kilo's chains
 * and rules per family, as Kilo writes them, comments included. render.ts diffs them against
 * iptables-save; `kgctl plan -o text` prints them.
 */

export type IptablesTable = 'nat' | 'filter';

/** A chain Kilo owns; the dataplane replaces it whole. */
export interface IptablesChain {
  family: IPFamily;
  table: IptablesTable;
  name: string;
}

/**
 * One iptables rule. Rules in Kilo's chains keep their order; rules in built-in chains
 * (POSTROUTING, INPUT, FORWARD) are jumps placed at the head ("prepend") or tail ("append").
 */
export interface IptablesRule {
  family: IPFamily;
  table: IptablesTable;
  chain: string;
  args: string[];
  comment: string;
  position: 'prepend' | 'append';
}

export interface IptablesRules {
  chains: IptablesChain[];
  rules: IptablesRule[];
}

export const natChain = 'KILO-NAT';
export const ipipChain = 'KILO-IPIP';

/** The comment of the rule that counts what a relay forwards (read back by it: tables.ts). */
export const relayedComment = 'Kilo: count packets relayed between WireGuard peers';

/** The comment of each group of destinations KILO-NAT returns, so `iptables -S` says why. */
const exceptionComment: Record<MasqueradeExceptionReason, string> = {
  'wireguard-ips': 'Kilo: do not NAT packets destined for WireGuard IPs',
  'known-ips': 'Kilo: do not NAT packets destined for known IPs',
  peers: 'Kilo: do not NAT packets destined for peers',
  'service-cidrs': 'Kilo: do not NAT packets destined for service CIDRs',
};

/** The family of a canonical CIDR text. */
const familyOf = (cidr: string): IPFamily => (cidr.includes(':') ? 6 : 4);

/**
 * Kilo's iptables rules for a firewall intent, both families: the jumps to KILO-NAT in nat
 * POSTROUTING (the pod CIDR, the allowed location IPs, the Peers), KILO-NAT's returns and closing
 * MASQUERADE, the FORWARD accepts, and with an IPIP policy the INPUT jump to KILO-IPIP, its
 * accepts and the INPUT drop of other IPIP; on a relay, the rule that counts what it relays, at the
 * head of FORWARD. `kilo`: the WireGuard interface's name (`kilo`, its role, where the plan is printed).
 */
export function iptablesRulesOf(fw: Firewall, kilo = 'kilo'): IptablesRules {
  const out: IptablesRules = {
    chains: [
      { family: 4, table: 'nat', name: natChain },
      { family: 6, table: 'nat', name: natChain },
    ],
    rules: [],
  };
  const add = (
    family: IPFamily,
    table: IptablesTable,
    chain: string,
    args: string[],
    comment: string,
    position: IptablesRule['position'] = 'append',
  ) => out.rules.push({ family, table, chain, args, comment, position });
  const toNat = 'Kilo: jump to KILO-NAT chain';
  const m = fw.masquerade;

  for (const c of m.podCIDRs) add(familyOf(c), 'nat', 'POSTROUTING', ['-s', c, '-j', natChain], toNat, 'prepend');
  // First in FORWARD, so that it counts what Kilo's accepts below let through too. No target: the
  // packet goes on, and the restore's edits keep the rule, and its counters, in place.
  if (fw.countRelayed)
    for (const family of [4, 6] as const)
      add(family, 'filter', 'FORWARD', ['-i', kilo, '-o', kilo], relayedComment, 'prepend');
  for (const c of fw.forwardPodCIDRs) {
    const f = familyOf(c);
    add(f, 'filter', 'FORWARD', ['-s', c, '-j', 'ACCEPT'], 'Kilo: forward packets from the pod subnet', 'prepend');
    add(f, 'filter', 'FORWARD', ['-d', c, '-j', 'ACCEPT'], 'Kilo: forward packets to the pod subnet', 'prepend');
  }
  for (const c of m.allowedLocationIPs)
    add(familyOf(c), 'nat', 'POSTROUTING', ['-d', c, '-j', natChain], toNat, 'prepend');
  for (const c of m.peerAllowedIPs) add(familyOf(c), 'nat', 'POSTROUTING', ['-s', c, '-j', natChain], toNat, 'prepend');
  for (const group of m.exceptions) {
    const comment = exceptionComment[group.reason];
    for (const c of group.destinations) add(familyOf(c), 'nat', natChain, ['-d', c, '-j', 'RETURN'], comment);
  }
  add(4, 'nat', natChain, ['-j', 'MASQUERADE'], 'Kilo: NAT remaining packets');
  add(6, 'nat', natChain, ['-j', 'MASQUERADE'], 'Kilo: NAT remaining packets');

  if (fw.ipip) {
    out.chains.push({ family: 4, table: 'filter', name: ipipChain }, { family: 6, table: 'filter', name: ipipChain });
    for (const family of [4, 6] as const)
      add(family, 'filter', 'INPUT', ['-p', 'ipencap', '-j', ipipChain], 'Kilo: jump to IPIP chain');
    for (const c of fw.ipip.sources)
      add(familyOf(c), 'filter', ipipChain, ['-s', c, '-j', 'ACCEPT'], 'Kilo: allow IPIP traffic');
    for (const family of [4, 6] as const)
      add(family, 'filter', 'INPUT', ['-p', 'ipencap', '-j', 'DROP'], 'Kilo: reject other IPIP traffic');
  }
  return out;
}

/** Nothing of Kilo's: what clean-up converges to. */
export const noIptablesRules = (): IptablesRules => ({ chains: [], rules: [] });
