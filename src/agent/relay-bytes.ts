import { Counter, type Registry } from 'prom-client';
import type { FirewallTables, RelayedCount } from '../dataplane/types.js';

/**
 * kilo_relayed_bytes_total and kilo_relayed_packets_total: what this node forwarded as a relay,
 * from the firewall rule that counts kilo0 → kilo0 (Firewall.countRelayed), read each pass while
 * it relays. The counters grow by the rule's increases. The rule's own figures start again from 0
 * whenever it is made again (the node stopped relaying and started again, the rule was deleted by
 * hand and restored): a figure below the last one, or one seen after a pass without the rule, is a
 * new rule's, and all of it is new. The first figure this process reads is only where it starts
 * from: what the rule counted before was an earlier run's to count (a restarted agent finds the
 * rule it left).
 */
export class RelayedTraffic {
  private readonly bytes: Counter;
  private readonly packets: Counter;
  /** The rule's figures at the last reading; null: no rule then; undefined: no reading yet. */
  private last: RelayedCount | null | undefined = undefined;

  constructor(registry: Registry) {
    this.bytes = new Counter({
      name: 'kilo_relayed_bytes_total',
      help: 'Bytes this node forwarded between WireGuard peers as a relay (their IP packets, as the firewall counts them).',
      registers: [registry],
    });
    this.packets = new Counter({
      name: 'kilo_relayed_packets_total',
      help: 'Packets this node forwarded between WireGuard peers as a relay.',
      registers: [registry],
    });
  }

  /**
   * After a pass's reconcile: reads the rule while the plan has it (`relaying`); a reading that
   * fails is told and skipped (the next one counts what this one missed).
   */
  async pass(
    relaying: boolean,
    firewall: Pick<FirewallTables, 'readRelayed'>,
    log: { debug(o: object, m: string): void },
  ): Promise<void> {
    if (!relaying) return this.observe(null);
    try {
      this.observe(await firewall.readRelayed());
    } catch (e) {
      log.debug({ err: (e as Error).message }, 'reading the relayed traffic counter failed');
    }
  }

  /** One reading of the rule: null when there is none (the node relays nothing). */
  observe(now: RelayedCount | null): void {
    const last = this.last;
    this.last = now;
    if (now === null || last === undefined) return;
    const restarted = last === null || now.bytes < last.bytes || now.packets < last.packets;
    const from = restarted ? { packets: 0, bytes: 0 } : last;
    this.packets.inc(now.packets - from.packets);
    this.bytes.inc(now.bytes - from.bytes);
  }
}
