import { Counter, Gauge, type Registry } from 'prom-client';
import type { PathObserver } from './path-health.js';
import type { PathHealthSummary } from './health-summary.js';

/**
 * Per-pair health in /metrics, bounded whatever the cluster's size: counts per path and state, and one series per failing pair for the few the Node's annotation lists
 * (health-summary.ts maxListed), never one per peer. Handshakes by age are metrics.ts's
 * kilo_wireguard_peers{handshake}, not repeated here.
 */
export class PathMetrics implements PathObserver {
  private readonly probes: Counter<'path' | 'result'>;
  private readonly pairs: Gauge<'state'>;
  private readonly failing: Gauge<'node' | 'path'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.probes = new Counter({
      name: 'kilo_path_probes_total',
      help: 'Probes of the paths this node is responsible for (private: a location mate in the clear; wireguard: a remote leader through the tunnel), by result.',
      labelNames: ['path', 'result'],
      registers,
    });
    this.pairs = new Gauge({
      name: 'kilo_path_pairs',
      help: 'The pairs this node is responsible for, by state (ok, failing, unknown: not judged yet).',
      labelNames: ['state'],
      registers,
    });
    this.failing = new Gauge({
      name: 'kilo_path_failing',
      help: 'A failing pair (1), for at most 8 of them; kilo_path_pairs{state="failing"} counts them all.',
      labelNames: ['node', 'path'],
      registers,
    });
  }

  probed(path: string, ok: boolean): void {
    this.probes.inc({ path, result: ok ? 'ok' : 'failed' });
  }

  judged(s: PathHealthSummary): void {
    for (const [state, n] of Object.entries(s.pairs)) this.pairs.set({ state }, n);
    this.failing.reset();
    for (const f of s.failing) this.failing.set({ node: f.node, path: f.path }, 1);
  }
}
