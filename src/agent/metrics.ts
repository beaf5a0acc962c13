import { Counter, Gauge, Registry } from 'prom-client';
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
  readonly handshake = new Gauge({
    name: 'kilo_wireguard_peer_latest_handshake_seconds',
    help: 'Unix time of the latest WireGuard handshake with the peer (0 = never).',
    labelNames: ['public_key'],
    registers: [this.registry],
  });
  readonly received = new Gauge({
    name: 'kilo_wireguard_peer_receive_bytes',
    help: 'Bytes received from the WireGuard peer.',
    labelNames: ['public_key'],
    registers: [this.registry],
  });
  readonly sent = new Gauge({
    name: 'kilo_wireguard_peer_transmit_bytes',
    help: 'Bytes sent to the WireGuard peer.',
    labelNames: ['public_key'],
    registers: [this.registry],
  });

  /** Replaces the per-peer series with the device's current peers (removed peers disappear). */
  observeDevice(state: WireGuardState): void {
    this.handshake.reset();
    this.received.reset();
    this.sent.reset();
    for (const p of state.peers) {
      this.handshake.set({ public_key: p.publicKey }, p.latestHandshake);
      this.received.set({ public_key: p.publicKey }, p.rxBytes);
      this.sent.set({ public_key: p.publicKey }, p.txBytes);
    }
  }
}
