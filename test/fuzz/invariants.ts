/**
 * The plan invariants of issue 12, checked on any plan: what conflicts.ts and the model promise.
 * Returns the violations as text (empty when the plan is safe).
 */
import type { Topology } from '../../src/mesh/topology.js';
import type { Plan } from '../../src/mesh/types.js';
import { Cidr } from '../../src/net/cidr.js';

export function planViolations(plan: Plan, t: Topology): string[] {
  const out: string[] = [];
  const own: Cidr[] = [];
  const self = t.local.node;
  own.push(...self.podCIDRs);
  for (const c of self.internalIPs) own.push(c.ip.toHostCidr());
  for (const ip of t.local.segment.wireGuardIPs) own.push(ip.toHostCidr());

  const keys = new Set<string>();
  const ips = new Map<string, string>();
  for (const p of plan.peers) {
    const who = `${p.kind} ${p.names.join('+')}`;
    if (keys.has(p.publicKey)) out.push(`two WireGuard peers share key ${p.publicKey} (${who})`);
    keys.add(p.publicKey);
    for (const text of p.allowedIPs) {
      const c = Cidr.parse(text);
      if (c.prefix === 0) out.push(`${who} has the catch-all allowed IP ${text}`);
      const other = ips.get(c.networkText);
      if (other !== undefined) out.push(`${who} and ${other} share the allowed IP ${text}`);
      ips.set(c.networkText, who);
      for (const o of own) if (o.overlaps(c)) out.push(`${who} claims the node's own ${o.networkText} (${text})`);
    }
  }
  const dsts = new Set<string>();
  for (const r of plan.routes) {
    const k = `${String(r.table)} ${r.dst}`;
    if (dsts.has(k)) out.push(`two routes in table ${String(r.table)} to ${r.dst}`);
    dsts.add(k);
    if (r.dev !== 'kilo') continue;
    const c = Cidr.parse(r.dst);
    if (c.prefix === 0) out.push(`a catch-all route into the tunnel: ${r.dst}`);
    for (const o of own)
      if (o.overlaps(c)) out.push(`the node routes its own ${o.networkText} into the tunnel (${r.dst})`);
  }
  return out;
}
