import type { Plan, PlanGuardRoute, PlanPeer, PlanRoute, PlanRule } from '../mesh/types.js';
import { iptablesRulesOf, type IptablesRule } from '../dataplane/iptables/rules.js';
import { wireGuardAddresses } from '../mesh/plan.js';
import { kiloRouteProtocol, kiloRulePriority } from '../dataplane/routes/constants.js';
import { guardMetric, guardRouteType } from '../dataplane/routes/guard.js';
import { nftRulesetOf, nftRulesetText } from '../dataplane/nftables/ruleset.js';
import { interfaceSection, peerSection } from '../wireguard/ini.js';
import { relayText } from './relay-text.js';
import { cutOffText } from '../mesh/cut-off.js';

/**
 * A plan as an operator reads it: the WireGuard device as `wg showconf` prints it, then the
 * routes and rules as `ip route` / `ip rule` arguments, then the firewall as iptables-save.
 * Devices stay roles (kilo, private, tunnel): the agent maps them to interface names. Secrets
 * never appear: the private key is named by its file, a preshared key by its Peer.
 */
export function renderPlanText(plan: Plan, o: { firewall?: 'iptables' | 'nftables' } = {}): string {
  const out: string[] = [
    `# kgctl plan ${plan.node}: granularity ${plan.granularity}, encapsulate ${plan.encapsulate}, ${segmentText(plan)}`,
    '# devices are roles: kilo = the WireGuard interface, private = the interface holding the internal IP, tunnel = the encapsulation interface',
    '',
  ];
  out.push(...relayText(plan));
  if (plan.cutOff) out.push(...plan.cutOff.map((c) => `# warning: ${cutOffText(c)}`), '');
  out.push(...wireGuardText(plan), '');
  if (plan.routes.length > 0) out.push(`# ip route (proto ${kiloRouteProtocol})`, ...plan.routes.map(routeText), '');
  if (plan.rules.length > 0) out.push(`# ip rule (priority ${kiloRulePriority})`, ...plan.rules.map(ruleText), '');
  const guard = plan.guard ?? [];
  if (guard.length > 0)
    out.push(
      `# ip route (proto ${kiloRouteProtocol}): the fail-closed guard, in effect while the route through kilo is gone`,
      ...guard.map(guardText),
      '',
    );
  out.push(...(o.firewall === 'nftables' ? nftablesText(plan) : firewallText(plan)));
  while (out.at(-1) === '') out.pop();
  return `${out.join('\n')}\n`;
}

/** Why a segment's leader leads, as the plan's header says it. */
export const leaderReasonText = {
  annotation: "chosen by Kilo's annotation rule",
  lease: 'holder of the location Lease',
  fallback: "no Lease binds: Kilo's annotation rule",
} as const;

/** Who runs WireGuard for this node: Kilo's "leader" means something only where segments have several nodes. */
function segmentText(plan: Plan): string {
  const { leader, nodes, leaderReason } = plan.segment;
  if (nodes.length === 1) return 'a segment of its own: it runs WireGuard to the other segments itself';
  const mates = `segment ${nodes.join(', ')}`;
  const why = leaderReasonText[leaderReason];
  return plan.leader
    ? `leader of ${mates} (${why}): it runs WireGuard for them`
    : `not the leader of ${mates}: traffic to other segments goes through ${leader} (${why})`;
}

function wireGuardText(plan: Plan): string[] {
  if (!plan.interfaceUp) return ['# WireGuard: interface kilo is down (only the leader of a segment runs WireGuard)'];
  const [header, ...rest] = interfaceSection({
    listenPort: plan.listenPort,
    fwMark: plan.fwmark,
    address: wireGuardAddresses(plan),
  });
  const lines = [header!, `PrivateKey = (read from ${plan.privateKey.path})`, ...rest];
  for (const p of plan.peers) lines.push('', ...peerSection(iniPeer(p)));
  return lines;
}

function iniPeer(p: PlanPeer) {
  const who = p.kind === 'peer' ? `${p.names.join(', ')} (Peer)` : p.names.join(', ');
  return {
    comment: who,
    publicKey: p.publicKey,
    presharedKey: p.presharedKey ? `(from Peer ${p.names.join(', ')})` : null,
    allowedIPs: p.allowedIPs,
    endpoint: p.endpoint,
    persistentKeepalive: p.persistentKeepalive,
  };
}

export function routeText(r: PlanRoute): string {
  const parts = [r.dst];
  if (r.gw) parts.push('via', r.gw);
  parts.push('dev', r.dev);
  if (r.onlink) parts.push('onlink');
  if (r.src) parts.push('src', r.src);
  if (r.table !== 'main') parts.push('table', String(r.table));
  return parts.join(' ');
}

/** A guard route as `ip route add` takes it: after the route through kilo, by metric. */
export function guardText(g: PlanGuardRoute): string {
  const parts = [guardRouteType, g.dst, 'metric', String(guardMetric(g.dst.includes(':') ? 6 : 4))];
  if (g.table !== 'main') parts.push('table', String(g.table));
  return parts.join(' ');
}

export function ruleText(r: PlanRule): string {
  const parts: string[] = r.invert ? ['not'] : [];
  if (r.src) parts.push('from', r.src);
  if (r.iif) parts.push('iif', r.iif);
  if (r.dst) parts.push('to', r.dst);
  if (r.fwmark !== undefined) parts.push('fwmark', `0x${r.fwmark.toString(16)}`);
  parts.push('lookup', String(r.table));
  return parts.join(' ');
}

/**
 * The firewall as the iptables backend renders it, in iptables-save layout per family and table:
 * Kilo's chains declared, then the rules in order.
 */
function firewallText(plan: Plan): string[] {
  const out: string[] = [];
  const firewall = iptablesRulesOf(plan.firewall);
  for (const family of [4, 6] as const) {
    const tables = (['nat', 'filter'] as const).filter(
      (t) =>
        firewall.rules.some((r) => r.family === family && r.table === t) ||
        firewall.chains.some((c) => c.family === family && c.table === t),
    );
    if (tables.length === 0) continue;
    out.push(`# ${family === 4 ? 'iptables' : 'ip6tables'}`);
    for (const table of tables) {
      out.push(`*${table}`);
      for (const c of firewall.chains) if (c.family === family && c.table === table) out.push(`:${c.name} - [0:0]`);
      for (const r of firewall.rules) if (r.family === family && r.table === table) out.push(ruleLine(r));
      out.push('COMMIT');
    }
    out.push('');
  }
  return out;
}

/** The firewall as the nftables backend renders it: Kilo's table, as `nft list table inet kilo` shows it. */
function nftablesText(plan: Plan): string[] {
  return [
    '# nft (one table for both families; every change is one nft -f transaction)',
    ...nftRulesetText(nftRulesetOf(plan.firewall)),
    '',
  ];
}

/** `-A`/`-I` then the match, the Kilo comment, then the target, as iptables-save orders them. */
export function ruleLine(r: IptablesRule): string {
  const jump = r.args.indexOf('-j');
  const match = jump < 0 ? r.args : r.args.slice(0, jump);
  const target = jump < 0 ? [] : r.args.slice(jump);
  const verb = r.position === 'prepend' ? '-I' : '-A';
  return [verb, r.chain, ...match, '-m', 'comment', '--comment', JSON.stringify(r.comment), ...target].join(' ');
}
