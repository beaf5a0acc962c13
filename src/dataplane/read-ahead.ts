import type { LinkState } from './links.js';
import type { Dataplane } from './reconcile.js';
import type { RoutingRead } from './routes/reconciler.js';
import type { FirewallWritten, WireGuardWritten } from './types.js';

/** The reads a reconcile takes from a ReadAhead; each undefined when it failed (the step then reads, and says why). */
export interface TakenAhead {
  /** The interface's creation, its failure included; whether it created it. */
  ensured: Promise<boolean>;
  device: Promise<WireGuardWritten | undefined>;
  link: Promise<LinkState | undefined>;
  routes: Promise<RoutingRead | undefined>;
  firewall: Promise<FirewallWritten | undefined>;
}

const orUndefined = <T>(p: Promise<T>): Promise<T | undefined> => p.catch(() => undefined);

/**
 * Reading ahead, in one place: each seam's own read started before the reconcile that diffs
 * against it (kg apply: while it parses and plans, the reads run in other processes), handed to
 * that reconcile as the state to diff against (see docs/dataplane.md). It knows, from the order of
 * the steps, which writes make a read stale: creating the interface (its reads are taken again,
 * still ahead), and a link write that may remove routes (reconcile.ts: the routes step then reads).
 * One reconcile takes it, once: a read it did not take is not left for a later one.
 */
export class ReadAhead {
  private reads: Omit<TakenAhead, 'ensured'> | null = null;
  private ensuring: Promise<boolean> | null = null;
  private taken = false;

  constructor(
    private readonly dp: Dataplane,
    private readonly kilo: string,
  ) {}

  /** Starts every read of the next reconcile now: the WireGuard device, interface `kilo`, routes and rules, firewall. */
  start(): void {
    this.reads = {
      device: orUndefined(this.dp.device.dump()),
      link: orUndefined(this.dp.links.read(this.kilo)),
      routes: orUndefined(this.dp.routes.readUnparsed()),
      firewall: orUndefined(this.dp.firewall.read()),
    };
  }

  /**
   * Makes sure the interface exists now, for the reconcile that follows (kg apply creates it while
   * it plans); that reconcile takes the outcome, its failure included. Resolves to whether it created
   * the interface; never rejects. Creating it makes the interface's reads stale: they are taken again
   * once it is there (the routes' and the firewall's are not: a new link removes no route).
   */
  ensure(): Promise<boolean> {
    if (!this.ensuring) {
      const ensuring = this.dp.device.ensure();
      this.ensuring = ensuring;
      ensuring.catch(() => {});
      const reads = this.reads;
      if (reads) {
        const again = <T>(early: Promise<T | undefined>, read: () => Promise<T>) =>
          ensuring.then(
            (created) => (created ? orUndefined(read()) : early),
            () => undefined,
          );
        reads.device = again(reads.device, () => this.dp.device.dump());
        reads.link = again(reads.link, () => this.dp.links.read(this.kilo));
      }
    }
    return this.ensuring.catch(() => false);
  }

  /** For reconcile: the interface's creation (started now if it was not) and every read, once. */
  take(): TakenAhead {
    const ensured = this.ensure().then(() => this.ensuring!);
    const reads = this.reads ?? {
      device: Promise.resolve(undefined),
      link: Promise.resolve(undefined),
      routes: Promise.resolve(undefined),
      firewall: Promise.resolve(undefined),
    };
    this.reads = null;
    this.taken = true;
    return { ensured, ...reads };
  }

  /**
   * Removes the interface `ensure` created when no reconcile took it (the plan it was made for
   * failed): an apply that writes nothing leaves nothing behind, wireguard-go's log included. One
   * that was there before is left alone.
   */
  async undo(): Promise<void> {
    const ensuring = this.ensuring;
    this.reads = null;
    if (this.taken || !ensuring || !(await ensuring.catch(() => false))) return;
    this.ensuring = null;
    await this.dp.device.destroy({ log: true });
  }
}
