import type { Logger } from '../backend/source.js';
import type { Topology } from '../mesh/topology.js';

/**
 * Follows who leads each location from one plan to the next: one log line and one count per
 * change, whatever made it (a Lease, the annotation rule, a node leaving).
 */
export class LeadershipLog {
  private readonly leaders = new Map<string, string>();

  constructor(
    private readonly log: Logger,
    private readonly counted: (location: string) => void,
  ) {}

  observe(t: Topology): void {
    if (t.granularity !== 'location') return;
    for (const s of t.segments) {
      if (!s.key.startsWith('location:')) continue;
      const before = this.leaders.get(s.location);
      if (before === s.leader.name) continue;
      this.leaders.set(s.location, s.leader.name);
      if (before === undefined) continue;
      this.counted(s.location);
      this.log.info(
        { location: s.location, from: before, to: s.leader.name, reason: s.leaderReason },
        'location leader changed',
      );
    }
  }
}
