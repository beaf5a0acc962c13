import { Counter, Gauge, Registry, type Metric } from 'prom-client';
import type { WireGuardState } from '../dataplane/types.js';

/**
 * Kilo's metric names, so existing dashboards keep working, plus the WireGuard device's figures:
 * bounded aggregates, and per peer only when asked for (--metrics-per-peer).
 */
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
  /** The device's peers by handshake: `recent` (within staleHandshakeSeconds), `stale`, `never`. */
  readonly wireGuardPeers = new Gauge({
    name: 'kilo_wireguard_peers',
    help: `WireGuard peers on the device, by their latest handshake: recent (within ${staleHandshakeSeconds} s), stale or never.`,
    labelNames: ['handshake'],
    registers: [this.registry],
  });
  readonly receivedTotal = new Gauge({
    name: 'kilo_wireguard_receive_bytes',
    help: "Bytes received from the device's current WireGuard peers, summed.",
    registers: [this.registry],
  });
  readonly sentTotal = new Gauge({
    name: 'kilo_wireguard_transmit_bytes',
    help: "Bytes sent to the device's current WireGuard peers, summed.",
    registers: [this.registry],
  });
  /** Per-peer series (--metrics-per-peer): null unless asked for. */
  private readonly perPeer: PerPeerGauges | null;

  /**
   * `perPeer` (kg's --metrics-per-peer): also a series per WireGuard peer and figure, three per
   * node of the mesh (about 1.4 MB of page at 5,000 nodes); without it the page holds the
   * aggregates above, its size independent of the mesh's (docs/kg.md#metrics).
   */
  constructor(options: { perPeer?: boolean } = {}) {
    this.perPeer = options.perPeer ? new PerPeerGauges(this.registry) : null;
  }

  /**
   * Replaces the WireGuard figures with the device's current peers (removed peers disappear);
   * `nowSeconds`: the time the handshakes are judged at.
   */
  observeDevice(state: WireGuardState, nowSeconds = Date.now() / 1000): void {
    let recent = 0;
    let never = 0;
    let rx = 0;
    let tx = 0;
    for (let i = 0; i < state.peers.length; i++) {
      const p = state.peers[i]!;
      if (p.latestHandshake === 0) never++;
      else if (nowSeconds - p.latestHandshake <= staleHandshakeSeconds) recent++;
      rx += p.rxBytes;
      tx += p.txBytes;
    }
    this.wireGuardPeers.set({ handshake: 'recent' }, recent);
    this.wireGuardPeers.set({ handshake: 'stale' }, state.peers.length - recent - never);
    this.wireGuardPeers.set({ handshake: 'never' }, never);
    this.receivedTotal.set(rx);
    this.sentTotal.set(tx);
    this.perPeer?.observe(state);
  }
}

/**
 * WireGuard's REJECT_AFTER_TIME: a session is not used past 180 s after its handshake, so a peer
 * that exchanges traffic (or keepalives) never has a handshake older than this.
 */
export const staleHandshakeSeconds = 180;

/** kilo-ts's per-peer WireGuard gauges (label `public_key`), behind --metrics-per-peer. */
class PerPeerGauges {
  private readonly handshake: PeerGauge;
  private readonly received: PeerGauge;
  private readonly sent: PeerGauge;

  constructor(registry: Registry) {
    this.handshake = new PeerGauge(
      registry,
      'kilo_wireguard_peer_latest_handshake_seconds',
      'Unix time of the latest WireGuard handshake with the peer (0 = never).',
    );
    this.received = new PeerGauge(
      registry,
      'kilo_wireguard_peer_receive_bytes',
      'Bytes received from the WireGuard peer.',
    );
    this.sent = new PeerGauge(registry, 'kilo_wireguard_peer_transmit_bytes', 'Bytes sent to the WireGuard peer.');
  }

  observe(state: WireGuardState): void {
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
