import { Counter, Gauge, Registry, type Metric } from 'prom-client';
import type { WireGuardState } from '../dataplane/types.js';

/** Kilo's metric names, so existing dashboards keep working, plus per-peer WireGuard figures. */
export class AgentMetrics {
  readonly registry = new Registry();
  readonly nodes = new Gauge({
    name: 'kilo_nodes',
    help: 'Number of ready nodes in the mesh.',
    registers: [this.registry],
  });
  readonly peers = new Gauge({
    name: 'kilo_peers',
    help: 'Number of ready Peers in the mesh.',
    registers: [this.registry],
  });
  readonly leader = new Gauge({
    name: 'kilo_leader',
    help: 'Leadership status of the node (1 = leader).',
    registers: [this.registry],
  });
  readonly errors = new Counter({
    name: 'kilo_errors_total',
    help: 'Number of errors that occurred while reconciling.',
    registers: [this.registry],
  });
  readonly reconciles = new Counter({
    name: 'kilo_reconciles_total',
    help: 'Number of reconciliation attempts.',
    registers: [this.registry],
  });
  readonly writes = new Counter({
    name: 'kilo_dataplane_writes_total',
    help: 'Write operations made on the dataplane.',
    registers: [this.registry],
  });
  readonly dropped = new Counter({
    name: 'kilo_invalid_objects_total',
    help: 'Objects dropped from the mesh for a malformed value, counted once per distinct problem.',
    labelNames: ['kind'],
    registers: [this.registry],
  });
  readonly handshake = new PeerGauge(
    this.registry,
    'kilo_wireguard_peer_latest_handshake_seconds',
    'Unix time of the latest WireGuard handshake with the peer (0 = never).',
  );
  readonly received = new PeerGauge(
    this.registry,
    'kilo_wireguard_peer_receive_bytes',
    'Bytes received from the WireGuard peer.',
  );
  readonly sent = new PeerGauge(
    this.registry,
    'kilo_wireguard_peer_transmit_bytes',
    'Bytes sent to the WireGuard peer.',
  );

  /** Replaces the per-peer series with the device's current peers (removed peers disappear). */
  observeDevice(state: WireGuardState): void {
    const keys = state.peers.map((p) => p.publicKey);
    this.handshake.replace(
      keys,
      Float64Array.from(state.peers, (p) => p.latestHandshake),
    );
    this.received.replace(
      keys,
      Float64Array.from(state.peers, (p) => p.rxBytes),
    );
    this.sent.replace(
      keys,
      Float64Array.from(state.peers, (p) => p.txBytes),
    );
  }
}

interface PeerValue {
  labels: { public_key: string };
  value: number;
}

/**
 * A gauge per WireGuard peer (label `public_key`), kept as the keys and one array of numbers, not
 * prom-client series: docs/performance.md#the-heap.
 */
class PeerGauge {
  readonly type = 'gauge';
  readonly aggregator = 'sum';
  private keys: readonly string[] = [];
  private values: Float64Array = new Float64Array(0);

  constructor(
    registry: Registry,
    readonly name: string,
    readonly help: string,
  ) {
    registry.registerMetric(this as unknown as Metric);
  }

  replace(keys: readonly string[], values: Float64Array): void {
    this.keys = keys;
    this.values = values;
  }

  /** What the registry reads when it writes the page (prom-client's MetricObjectWithValues). */
  get(): { name: string; help: string; type: string; aggregator: string; values: PeerValue[] } {
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values: this.keys.map((key, i) => ({ labels: { public_key: key }, value: this.values[i]! })),
    };
  }

  reset(): void {
    this.replace([], new Float64Array(0));
  }
}
