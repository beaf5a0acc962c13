import type { Firewall, IPFamily, MasqueradeExceptionReason } from '../../mesh/types.js';
import { aggregate } from '../../net/aggregate.js';
import { Cidr } from '../../net/cidr.js';

/**
 * The nftables rendering of the plan's firewall intent (src/mesh/firewall-types.ts): one `inet`
 * table of Kilo's own, `kilo`, holding both families. One table, not one per family, because then
 * a change is one table's transaction, a read is one `nft -j list table`, clean-up is one
 * `delete table`, and a rule that is the same for both families (the masquerade, the IPIP drop) is
 * written once; `inet` nat needs Linux 5.2. Addresses live in interval sets, one per purpose and
 * family, so a node joining or leaving is an element added or deleted, not a chain rewritten, and
 * a packet costs one lookup per set whatever the cluster's size.
 *
 * The packets are the iptables backend's (rules.ts): postrouting sends what leaves from the pod
 * CIDR or a Peer, or goes to an allowed location IP, to `kilo-nat`, which returns what goes to an
 * address inside the mesh and masquerades the rest; forward accepts the forwarded pod CIDRs; input
 * accepts IPIP from the listed sources and drops other IPIP.
 */

export const nftTable = 'kilo';
export const nftFamily = 'inet';

/** Every rule Kilo writes carries a comment starting so: a table whose rules do not is not Kilo's. */
export const nftCommentPrefix = 'Kilo:';

export interface NftSet {
  name: string;
  type: 'ipv4_addr' | 'ipv6_addr';
  /** Canonical CIDR texts (Cidr.networkText), fewest prefixes, sorted: never overlapping. */
  elements: string[];
}

export interface NftBase {
  type: 'nat' | 'filter';
  hook: 'postrouting' | 'forward' | 'input';
  /** The numeric priority: srcnat = 100, filter = 0. */
  priority: number;
}

export interface NftChain {
  name: string;
  /** A base chain's hook; null for a chain only jumped to. */
  base: NftBase | null;
  /** Rules in nft's own listing syntax (see json.ts), each with its `comment "Kilo: …"`. */
  rules: string[];
}

export interface NftRuleset {
  sets: NftSet[];
  chains: NftChain[];
}

/**
 * Kilo decides first: its masquerade runs before the iptables nat chains and other tables at
 * srcnat (an iptables jump to KILO-NAT is at the head of POSTROUTING), and the first NAT decision
 * of a connection is the one kept.
 */
export const postroutingPriority = 99;
export const filterPriority = 0;

const reasons: readonly MasqueradeExceptionReason[] = ['wireguard-ips', 'known-ips', 'peers', 'service-cidrs'];
const exceptionComment: Record<MasqueradeExceptionReason, string> = {
  'wireguard-ips': 'Kilo: do not NAT packets destined for WireGuard IPs',
  'known-ips': 'Kilo: do not NAT packets destined for known IPs',
  peers: 'Kilo: do not NAT packets destined for peers',
  'service-cidrs': 'Kilo: do not NAT packets destined for service CIDRs',
};

const v = (f: IPFamily) => `v${f}`;
const sel = (f: IPFamily) => (f === 4 ? 'ip' : 'ip6');
const comment = (text: string) => `comment ${JSON.stringify(text)}`;

/** The fewest prefixes of `cidrs` in `family`, sorted as text: what an interval set holds and lists back. */
function setOf(cidrs: readonly string[], family: IPFamily): string[] {
  const parsed = cidrs.map((c) => Cidr.parse(c)).filter((c) => c.family === family);
  return aggregate(parsed)
    .map((c) => c.networkText)
    .sort();
}

/** The base chain that counts what a relay forwards (docs/relays.md), and its rule's comment. */
export const relayedChain = 'relayed';
export const relayedComment = 'Kilo: count packets relayed between WireGuard peers';

/**
 * Kilo's nftables table for a firewall intent. `kilo`: the WireGuard interface's name (`kilo`, its
 * role, where the plan is printed).
 */
export function nftRulesetOf(fw: Firewall, kilo = 'kilo'): NftRuleset {
  const sets: NftSet[] = [];
  const postrouting: string[] = [];
  const masquerade: string[] = [];
  const forward: string[] = [];
  const input: string[] = [];
  const m = fw.masquerade;
  const sources = [...m.podCIDRs, ...m.peerAllowedIPs];
  for (const f of [4, 6] as const) {
    const type = f === 4 ? 'ipv4_addr' : 'ipv6_addr';
    const set = (name: string, cidrs: readonly string[]) => {
      sets.push({ name: `${name}-${v(f)}`, type, elements: setOf(cidrs, f) });
      return `@${name}-${v(f)}`;
    };
    postrouting.push(
      `${sel(f)} saddr ${set('masquerade-sources', sources)} jump kilo-nat ${comment('Kilo: jump to the kilo-nat chain: from the pod CIDR or a Peer')}`,
      `${sel(f)} daddr ${set('masquerade-destinations', m.allowedLocationIPs)} jump kilo-nat ${comment('Kilo: jump to the kilo-nat chain: to an allowed location IP')}`,
    );
    for (const reason of reasons) {
      const group = m.exceptions.find((e) => e.reason === reason)?.destinations ?? [];
      masquerade.push(
        `${sel(f)} daddr ${set(`no-masquerade-${reason}`, group)} return ${comment(exceptionComment[reason])}`,
      );
    }
    if (fw.forwardPodCIDRs.length > 0) {
      const s = set('forward', fw.forwardPodCIDRs);
      forward.push(
        `${sel(f)} saddr ${s} accept ${comment('Kilo: forward packets from the pod subnet')}`,
        `${sel(f)} daddr ${s} accept ${comment('Kilo: forward packets to the pod subnet')}`,
      );
    }
    if (fw.ipip) {
      const s = set('ipip-sources', fw.ipip.sources);
      input.push(`meta l4proto ipip ${sel(f)} saddr ${s} accept ${comment('Kilo: allow IPIP traffic')}`);
    }
  }
  masquerade.push(`masquerade ${comment('Kilo: NAT remaining packets')}`);
  if (fw.ipip) input.push(`meta l4proto ipip drop ${comment('Kilo: reject other IPIP traffic')}`);

  const chains: NftChain[] = [
    {
      name: 'postrouting',
      base: { type: 'nat', hook: 'postrouting', priority: postroutingPriority },
      rules: postrouting,
    },
    { name: 'kilo-nat', base: null, rules: masquerade },
  ];
  if (forward.length > 0)
    chains.push({
      name: 'forward',
      base: { type: 'filter', hook: 'forward', priority: filterPriority },
      rules: forward,
    });
  if (input.length > 0)
    chains.push({ name: 'input', base: { type: 'filter', hook: 'input', priority: filterPriority }, rules: input });
  // A base chain of its own: refilling `forward` (the pod CIDRs changed) never resets its counter.
  if (fw.countRelayed)
    chains.push({
      name: relayedChain,
      base: { type: 'filter', hook: 'forward', priority: filterPriority },
      rules: [`meta iifname ${kilo} meta oifname ${kilo} counter ${comment(relayedComment)}`],
    });
  return { sets, chains };
}

/** A base chain's declaration, as `nft` reads it. */
export function baseText(b: NftBase): string {
  const named = b.type === 'nat' ? 'srcnat' : 'filter';
  const at = b.type === 'nat' ? 100 : 0;
  const priority = b.priority === at ? named : `${named} ${b.priority < at ? '-' : '+'} ${Math.abs(b.priority - at)}`;
  return `type ${b.type} hook ${b.hook} priority ${priority}; policy accept;`;
}

/** The table as `nft list table inet kilo` would show it: what `kgctl plan -o text` prints. */
export function nftRulesetText(r: NftRuleset): string[] {
  const out = [`table ${nftFamily} ${nftTable} {`];
  for (const s of r.sets) {
    out.push(`\tset ${s.name} {`, `\t\ttype ${s.type}`, '\t\tflags interval');
    if (s.elements.length > 0) out.push(`\t\telements = { ${s.elements.join(', ')} }`);
    out.push('\t}', '');
  }
  for (const c of r.chains) {
    out.push(`\tchain ${c.name} {`);
    if (c.base) out.push(`\t\t${baseText(c.base)}`);
    for (const rule of c.rules) out.push(`\t\t${rule}`);
    out.push('\t}', '');
  }
  if (out.at(-1) === '') out.pop();
  out.push('}');
  return out;
}
