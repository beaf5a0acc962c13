import type { Host } from '../host/host.js';

/**
 * The one probing mechanism of an agent: the per-pair health (path-health.ts), the Lease
 * election's data-path and relay probes (election/health.ts, relay.ts, handed `host()`) and, later,
 * relays' "which peers can I not reach directly" all ping through it. A probe of an address that is
 * in flight, or was answered less than `freshMs` ago, is shared rather than sent again: a leader's
 * election probe of a follower and its path probe of the same follower (the same address, the
 * first of the pod CIDR) are one packet.
 */
export class Prober {
  private readonly inFlight = new Map<string, Promise<boolean>>();
  private readonly recent = new Map<string, { at: number; ok: boolean }>();
  /** Echo requests actually sent (tests and metrics). */
  sent = 0;

  constructor(
    private readonly ping: (address: string) => Promise<boolean>,
    private readonly o: { freshMs?: number; clock?: () => number } = {},
  ) {}

  probe(address: string): Promise<boolean> {
    const now = (this.o.clock ?? Date.now)();
    const seen = this.recent.get(address);
    if (seen && now - seen.at < (this.o.freshMs ?? 1000)) return Promise.resolve(seen.ok);
    const running = this.inFlight.get(address);
    if (running) return running;
    this.sent++;
    const p = this.ping(address)
      .catch(() => false)
      .then((ok) => {
        this.inFlight.delete(address);
        this.recent.set(address, { at: (this.o.clock ?? Date.now)(), ok });
        // Only the last second's answers are worth keeping: drop the rest now and then.
        if (this.recent.size > 4096) this.recent.clear();
        return ok;
      });
    this.inFlight.set(address, p);
    return p;
  }

  /** `host` with its pings made through this prober (what the election is given). */
  host(host: Host): Host {
    return {
      addresses: (iface) => host.addresses(iface),
      link: (name) => host.link(name),
      defaultRoute: () => host.defaultRoute(),
      bringUp: (name) => host.bringUp(name),
      loadModule: (name) => host.loadModule(name),
      ipv4Forwarding: () => host.ipv4Forwarding(),
      ipv6Forwarding: () => host.ipv6Forwarding(),
      wouldForward: (from, to, iif) => host.wouldForward(from, to, iif),
      ping: (address) => this.probe(address),
    };
  }
}
