import type { Exec } from '../dataplane/exec.js';
import type { Topology } from '../mesh/topology.js';
import { forwardingProbe, probeTargets, roundFails, type ProbeTarget } from './probes.js';

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
    private readonly exec: Exec,
    private readonly options: HealthOptions,
    private readonly observer: ProbeObserver,
  ) {}

  /** One round of probes against the current topology; returns the reason this node may not lead, or null. */
  async round(t: Topology | null): Promise<string | null> {
    let failing: boolean;
    let why: string;
    if (t && t.local.leader && t.granularity === 'location') {
      const targets = probeTargets(t);
      const fwd = forwardingProbe(t);
      const [results, forwards] = await Promise.all([
        Promise.all(targets.map((p) => this.ping(p.address))),
        fwd ? this.routeForwards(fwd.from, fwd.to) : Promise.resolve(null),
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
      const forwards = await this.kernelForwards();
      this.observer.forwarding(forwards);
      failing = !forwards;
      why = 'IPv4 forwarding is off';
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

  private ping(address: string): Promise<boolean> {
    return ping(this.exec, address);
  }

  private async routeForwards(from: string, to: string): Promise<boolean> {
    try {
      await this.exec.run(['ip', 'route', 'get', to, 'from', from, 'iif', this.options.interfaceName], {
        timeoutMs: 3_000,
      });
      return true;
    } catch {
      return false;
    }
  }

  private async kernelForwards(): Promise<boolean> {
    try {
      return (
        (await this.exec.run(['cat', '/proc/sys/net/ipv4/ip_forward'], { timeoutMs: 3_000 })).stdout.trim() === '1'
      );
    } catch {
      // Unknown is not a failure: a node must not resign over a missing file.
      return true;
    }
  }
}

/** One ICMP echo with a second's patience: true when answered. */
export async function ping(exec: Exec, address: string): Promise<boolean> {
  try {
    await exec.run(['ping', '-n', '-q', '-c', '1', '-W', '1', address], { timeoutMs: 3_000 });
    return true;
  } catch {
    return false;
  }
}
