import type { Encapsulator } from '../encapsulation/index.js';
import type { KiloNode } from '../model/types.js';
import type { Segment } from './topology.js';
import type { IPFamily, PlanCutOff } from './types.js';

/**
 * Followers of `segment` that share no LAN family with its leader (docs/dual-stack.md#edge-cases):
 * an IPv4-only node led by an IPv6-only one, or the reverse. The plan has no route between them
 * (plan.ts's toMate reaches a mate only over a family both have an internal IP of), so the follower
 * is cut off from the mesh; said, not fixed: Kilo's leader rule stays, and the operator marks a
 * dual-stack leader. Where the follower reaches its leader through a CNI's address (flannel,
 * cilium), not the leader's internal IP, the LAN's families are the CNI's concern and nothing is
 * judged. None in a segment of one node: cheap on the thousands of one-node segments of cross.
 */
export function cutOffFollowers(segment: Segment, enc: Encapsulator): PlanCutOff[] {
  const nodes = segment.nodes;
  if (nodes.length < 2) return [];
  const leader = segment.leader;
  const gw = enc.segmentGateway(leader);
  if (!leader.internalIPs.some((c) => c.ip.equals(gw))) return [];
  const out: PlanCutOff[] = [];
  for (let i = 0; i < nodes.length; i++) {
    const n = nodes[i]!;
    if (n === leader || sharesFamily(n, leader)) continue;
    out.push({ node: n.name, leader: leader.name, nodeFamilies: familiesOf(n), leaderFamilies: familiesOf(leader) });
  }
  return out;
}

function sharesFamily(a: KiloNode, b: KiloNode): boolean {
  return a.internalIPs.some((x) => b.internalIPs.some((y) => x.family === y.family));
}

function familiesOf(n: KiloNode): IPFamily[] {
  return n.internalIPs.map((c) => c.family);
}

const familyText = (fs: readonly IPFamily[]) => fs.map((f) => `IPv${f}`).join(' and ');

/** What the agent logs and kgctl prints: both nodes, their LAN families, and the way out. */
export function cutOffText(c: PlanCutOff): string {
  return (
    `${c.node} (LAN ${familyText(c.nodeFamilies)} only) shares no LAN family with ${c.leader}, its location's leader ` +
    `(LAN ${familyText(c.leaderFamilies)} only): no route between them, ${c.node} is cut off from the mesh; ` +
    `annotate a dual-stack node of the location kilo.squat.ai/leader (docs/dual-stack.md)`
  );
}
