import type { IptablesRule, IptablesRules } from './rules.js';
import { Cidr, IP } from '../../net/cidr.js';
import { ExecError } from '../exec.js';
import { joinArgs } from './syntax.js';

/**
 * A host without IPv6 netfilter (booted with ipv6.disable=1, or a kernel or module set without
 * ip6_tables / nf_tables IPv6) and what Kilo does about it. Kilo itself switches its whole IPv6
 * iptables controller off when the kernel has IPv6 disabled (squat/kilo#259); here the IPv6 part
 * of the plan is left out only when it is the scaffolding every plan carries, and an IPv6 rule
 * that names an IPv6 address is an error.
 */

/**
 * What an ip6tables command prints when the family cannot work on this host, as opposed to a rule
 * it refuses. Seen from iptables 1.8.9 legacy (socket(AF_INET6) or the table lookup failing):
 *   ip6tables-save v1.8.9 (legacy): Cannot initialize: Address family not supported by protocol
 *   ip6tables-save v1.8.9 (legacy): Cannot initialize: Table does not exist (do you need to insmod?)
 *   ip6tables v1.8.9 (legacy): can't initialize ip6tables table `nat': Address family not supported by protocol
 *   ip6tables-restore v1.8.9 (legacy): ip6tables-restore: unable to initialize table 'nat'
 * (restore hides the reason, and a legacy save with ip6_tables not loaded prints nothing and succeeds,
 * so the restore is often where it shows). With nf_tables the kernel's error comes back per object
 * ("line 2: CHAIN_ADD failed (Operation not supported): chain INPUT"): EAFNOSUPPORT anywhere, or a
 * built-in chain the kernel has no IPv6 chain type for; those two are inferred from iptables-nft's
 * error format, not seen on such a kernel.
 */
const unusable = [
  /Address family not supported by protocol/,
  /Protocol not supported/,
  /Table does not exist/,
  /unable to initialize table/,
  /(?:TABLE_ADD|CHAIN_ADD) failed \((?:Operation not supported|No such file or directory)\): (?:table|chain (?:PREROUTING|INPUT|FORWARD|OUTPUT|POSTROUTING)\b)/,
];

/**
 * Why IPv6 netfilter cannot be used here, when a failed ip6tables command says so: its message,
 * without the version banner. null for any other failure (a rule refused, the xtables lock, a
 * timeout), which stays an ordinary error and is tried again on the next reconcile.
 */
export function ipv6Unusable(e: unknown): string | null {
  if (!(e instanceof ExecError)) return null;
  const tool = e.argv[0] ?? 'ip6tables';
  // A missing binary (spawn fails with no code; in a namespace nsenter or a shell exits 127): no IPv6 tools.
  if (e.code === null || e.code === 127)
    return /ENOENT|not found|No such file/i.test(e.stderr) ? `${tool} not found` : null;
  const said = `${e.stderr}\n${e.stdout}`
    .split('\n')
    .map((l) =>
      l
        .replace(/^\S*tables\S*(?: v[\d.]+)?(?: \([^)]*\))?:\s*/, '')
        .replace(/^\S*tables\S*:\s*/, '')
        .trim(),
    )
    .find((l) => unusable.some((re) => re.test(l)));
  return said === undefined ? null : `${tool}: ${said}`;
}

/** The IPv6 rules of a plan and the first that names an IPv6 address, when one does. */
export interface IPv6Demand {
  rules: number;
  first: IptablesRule;
}

/**
 * Whether the plan's IPv6 part matters. Every IPv6 address in Kilo's firewall comes from the
 * cluster: an IPv6 pod CIDR, allowed IP of a Peer or allowed location IP (the POSTROUTING and
 * FORWARD rules), WireGuard or internal IP, or service CIDR. Without any, what is left is the
 * scaffolding every plan declares for both families: KILO-NAT and its closing MASQUERADE, reachable
 * only through a jump that names a source, and with encapsulation the INPUT jump to KILO-IPIP and
 * its DROP, guarding IPv6 IPIP that a cluster without IPv6 addresses never tunnels (and a kernel
 * with ipv6.disable=1 never receives). So: null when no IPv6 rule names an IPv6 address.
 */
export function ipv6Demand(firewall: IptablesRules): IPv6Demand | null {
  const rules = firewall.rules.filter((r) => r.family === 6);
  const first = rules.find(namesIPv6Address);
  return first ? { rules: rules.length, first } : null;
}

/** A plan rule as the error names it: `-t nat -A POSTROUTING -s fd00::/64 -j KILO-NAT`. */
export function describeRule(r: IptablesRule): string {
  return `-t ${r.table} -A ${r.chain} ${joinArgs(r.args)}`;
}

// Lists ("a,b"), ranges ("a-b") and "[addr]:port" are split so each address is seen.
const namesIPv6Address = (r: IptablesRule) =>
  r.args.some((a) => a.split(/[\s,[\]!-]+/).some((p) => (Cidr.tryParse(p)?.family ?? IP.tryParse(p)?.family) === 6));
