import { Gauge, type Registry } from 'prom-client';
import { cutOffText } from '../mesh/cut-off.js';
import type { Plan, PlanCutOff } from '../mesh/types.js';

/**
 * Says when a follower of this node's segment is cut off from its leader for want of a common LAN
 * family (plan.cutOff, docs/dual-stack.md#edge-cases) and when it is not any more: a warning once
 * per change, naming both nodes and their families, not one per pass. Counts them on /metrics
 * (kilo_cut_off_nodes, one series whatever the mesh's size).
 */
export class CutOffWatch {
  /** The last pass's, by follower: its text, so that a change of leader or families is said again. */
  private last = new Map<string, string>();
  private readonly gauge: Gauge;

  constructor(
    private readonly log: { info(o: object, m: string): void; warn(o: object, m: string): void },
    registry: Registry,
  ) {
    this.gauge = new Gauge({
      name: 'kilo_cut_off_nodes',
      help: "Followers of this node's location that share no LAN (internal-IP) family with its leader: no route between them.",
      registers: [registry],
    });
    this.gauge.set(0);
  }

  /** A pass's plan: its cut-off followers against the last. */
  observe(plan: Plan): void {
    const now = new Map<string, string>();
    const byNode = new Map<string, PlanCutOff>();
    for (const c of plan.cutOff ?? []) {
      now.set(c.node, cutOffText(c));
      byNode.set(c.node, c);
    }
    for (const [node, text] of now) {
      if (this.last.get(node) === text) continue;
      const c = byNode.get(node)!;
      this.log.warn(
        { node: c.node, leader: c.leader, nodeFamilies: c.nodeFamilies, leaderFamilies: c.leaderFamilies },
        text,
      );
    }
    for (const node of this.last.keys())
      if (!now.has(node)) this.log.info({ node }, `${node} is no longer cut off from its location's leader`);
    this.last = now;
    this.gauge.set(now.size);
  }
}
