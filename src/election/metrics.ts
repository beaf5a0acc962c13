import { Counter, Gauge, type Registry } from 'prom-client';

/** The election's figures in the agent's /metrics. */
export class ElectionMetrics {
  readonly transitions: Counter<'location'>;
  readonly renewalFailures: Counter<'location'>;
  readonly holding: Gauge;
  readonly probe: Gauge<'kind' | 'node'>;
  readonly probes: Counter<'kind' | 'result'>;
  readonly forwarding: Gauge;
  readonly relayComplaints: Gauge;

  constructor(registry: Registry) {
    const registers = [registry];
    this.transitions = new Counter({
      name: 'kilo_leader_transitions_total',
      help: 'Changes of a location leader as this node saw them.',
      labelNames: ['location'],
      registers,
    });
    this.renewalFailures = new Counter({
      name: 'kilo_lease_renewal_failures_total',
      help: 'Failed renewals of the Lease this node held.',
      labelNames: ['location'],
      registers,
    });
    this.holding = new Gauge({
      name: 'kilo_lease_held',
      help: 'Whether this node holds its location Lease (1) or not (0).',
      registers,
    });
    this.probe = new Gauge({
      name: 'kilo_leader_probe_success',
      help: 'The latest data-path probe of a follower or remote leader by this leader (1 = answered).',
      labelNames: ['kind', 'node'],
      registers,
    });
    this.probes = new Counter({
      name: 'kilo_leader_probes_total',
      help: 'Data-path probes sent by this node as leader, by result.',
      labelNames: ['kind', 'result'],
      registers,
    });
    this.forwarding = new Gauge({
      name: 'kilo_leader_forwarding',
      help: 'Whether the kernel forwards relayed packets (1) or not (0), as last checked.',
      registers,
    });
    this.relayComplaints = new Gauge({
      name: 'kilo_leader_relay_complaints',
      help: "Followers reporting that their probes through this leader fail, in this node's term as leader.",
      registers,
    });
  }
}
