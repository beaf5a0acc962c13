import { Gauge, type Registry } from 'prom-client';
import type { Plan, PlanRelay } from '../mesh/types.js';

/**
 * Says when this node's pairs go through a relay and when they come back (the log), and counts
 * them (/metrics: kilo_relayed_pairs{role}, two series whatever the mesh's size).
 */
export class RelayWatch {
  private last = new Map<string, PlanRelay>();
  private readonly gauge: Gauge<'role'>;

  constructor(
    private readonly node: string,
    private readonly log: { info(o: object, m: string): void; warn(o: object, m: string): void },
    registry: Registry,
  ) {
    this.gauge = new Gauge({
      name: 'kilo_relayed_pairs',
      help: 'Pairs of nodes that cannot reach each other directly, by this node’s role: end (one of the two; relay="none" when no node qualifies) or relay.',
      labelNames: ['role'],
      registers: [registry],
    });
    this.gauge.set({ role: 'end' }, 0);
    this.gauge.set({ role: 'relay' }, 0);
  }

  /** A pass's plan: its relayed pairs against the last. */
  observe(plan: Plan): void {
    const now = new Map((plan.relays ?? []).map((r) => [r.pair.join(' '), r]));
    // A spoke's pairs are all its peers: one line for them, not one per pair.
    const spokes = (m: Map<string, PlanRelay>) => [...m.values()].filter((r) => r.spoke).length;
    if (spokes(now) !== spokes(this.last))
      this.log.info({ pairs: spokes(now) }, `${spokes(now)} pairs with a spoke go through its hub (hub and spoke)`);
    for (const [k, r] of now) {
      if (r.spoke) continue;
      const before = this.last.get(k);
      if (before?.via === r.via) continue;
      const [a, b] = r.pair;
      if (r.via === null)
        this.log.warn(
          { pair: r.pair },
          `${a} and ${b} cannot reach each other directly and no node can relay for them`,
        );
      else if (r.via === this.node)
        this.log.info({ pair: r.pair }, `relaying between ${a} and ${b}: they cannot reach each other directly`);
      else
        this.log.info({ pair: r.pair, via: r.via }, `${a} and ${b} cannot reach each other directly: through ${r.via}`);
    }
    for (const [k, r] of this.last)
      if (!now.has(k) && !r.spoke)
        this.log.info(
          { pair: r.pair },
          r.via === this.node
            ? `no longer relaying between ${r.pair[0]} and ${r.pair[1]}`
            : `${r.pair[0]} and ${r.pair[1]} reach each other directly again`,
        );
    this.last = now;
    let ends = 0;
    let relays = 0;
    for (const r of now.values())
      if (r.via === this.node) relays++;
      else ends++;
    this.gauge.set({ role: 'end' }, ends);
    this.gauge.set({ role: 'relay' }, relays);
  }
}
