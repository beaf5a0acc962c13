import type { Host } from '../host/host.js';
import type { Topology } from '../mesh/topology.js';
import { forwardingProbes, probeTargets, roundFails, type ProbeTarget } from './probes.js';

export interface ProbeObserver {
  probed(target: ProbeTarget, ok: boolean): void;
  forwarding(ok: boolean): void;
}

export interface HealthOptions {
  /** Consecutive failing rounds before the leader gives up (and passing ones before it contends again). */
  failuresToResign: number;
  /** The WireGuard interface: relayed packets from remote locations arrive on it. */
  interfaceName: string;
}

/**
 * Data-path health at the edge: pings and the kernel's forwarding decision, run in rounds. A
 * leader is unfit after `failuresToResign` failing rounds in a row; a node that is not leading
 * can only check that its kernel forwards, and must pass that as many rounds before contending.
 */
export class DataPathHealth {
  private failures = 0;
  private passes = 0;
  private unfit = false;
  private last: { answering: Set<string>; remoteOk: boolean } | null = null;

  constructor(
    private readonly host: Host,
    private readonly options: HealthOptions,
    private readonly observer: ProbeObserver,
  ) {}

  /** One round of probes against the current topology; returns the reason this node may not lead, or null. */
  async round(t: Topology | null): Promise<string | null> {
    let failing: boolean;
    let why: string;
    if (t && t.local.leader && t.granularity === 'location') {
      const targets = probeTargets(t);
      const fwd = forwardingProbes(t);
      const [results, forwards] = await Promise.all([
        Promise.all(targets.map((p) => this.host.ping(p.address))),
        fwd.length > 0
          ? Promise.all(fwd.map((f) => this.host.wouldForward(f.from, f.to, this.options.interfaceName))).then((all) =>
              all.every(Boolean),
            )
          : Promise.resolve(null),
      ]);
      targets.forEach((p, i) => this.observer.probed(p, results[i]!));
      const remote = results.filter((_, i) => targets[i]!.kind === 'remote-leader');
      this.last = {
        answering: new Set(targets.filter((p, i) => p.kind === 'follower' && results[i]).map((p) => p.node)),
        remoteOk: remote.filter((ok) => ok).length * 2 > remote.length,
      };
      if (forwards !== null) this.observer.forwarding(forwards);
      failing = roundFails(results, forwards);
      const failed = targets.filter((_, i) => !results[i]).map((p) => p.node);
      why = forwards === false ? 'the kernel does not forward relayed packets' : `probes failing: ${failed.join(', ')}`;
    } else {
      this.last = null;
      const off = await this.forwardingOff(t);
      this.observer.forwarding(off === null);
      failing = off !== null;
      why = `${off ?? 'IPv4'} forwarding is off`;
    }
    if (failing) {
      this.passes = 0;
      if (++this.failures >= this.options.failuresToResign) this.unfit = true;
    } else {
      this.failures = 0;
      if (++this.passes >= this.options.failuresToResign) this.unfit = false;
    }
    return this.unfit ? why : null;
  }

  /**
   * What the last round as leader saw: the followers that answered, and whether most remote
   * leaders did (null: no round as leader since it last led).
   */
  lastLeaderRound(): { answering: ReadonlySet<string>; remoteOk: boolean } | null {
    return this.last;
  }

  /**
   * The first family of the node's pod CIDRs (IPv4 without a topology) its kernel does not
   * forward, or null: a leader relays pod traffic of each. Unknown is not a failure: a node must
   * not resign over a sysctl it cannot read.
   */
  private async forwardingOff(t: Topology | null): Promise<'IPv4' | 'IPv6' | null> {
    const pods = t?.local.node.podCIDRs ?? [];
    const six = pods.some((c) => c.family === 6);
    if ((pods.length === 0 || pods.some((c) => c.family === 4)) && (await this.host.ipv4Forwarding()) === false)
      return 'IPv4';
    if (six && (await this.host.ipv6Forwarding()) === false) return 'IPv6';
    return null;
  }
}
