import type { KubeObject } from '../../model/parse.js';
import { silentLogger, type ChangeListener, type Logger } from '../source.js';
import { Backoff, defaultBackoff, type BackoffOptions } from './backoff.js';
import { describeError, statusCodeOf } from './errors.js';

/** One complete read of a resource. */
export interface ListResult {
  resourceVersion: string;
  items: KubeObject[];
}

/**
 * Lists a resource; must give up when `signal` aborts. `resourceVersion` is passed on as the
 * list's parameter: "0" lets the API server answer from its watch cache, "" asks for a
 * consistent read from etcd.
 */
export type Lister = (signal: AbortSignal, resourceVersion: '0' | '') => Promise<ListResult>;

/** The shape of @kubernetes/client-node's `Watch`, so tests and the client are interchangeable. */
export interface WatchClient {
  watch(
    path: string,
    query: Record<string, string | number | boolean | undefined>,
    callback: (type: string, object: unknown) => void,
    done: (err: unknown) => void,
  ): Promise<AbortController>;
}

export interface ReflectorTimings {
  /**
   * Full relist this often, to repair anything a watch may have missed. Every node's agent
   * does it, so in a cluster of N nodes the API server serves N lists of N nodes per period.
   */
  resyncPeriodMs: number;
  /** timeoutSeconds asked of the server for each watch, before jitter. */
  watchTimeoutSeconds: number;
  /** Fraction of watchTimeoutSeconds drawn at random (±), so watches of many agents spread out. */
  watchTimeoutJitter: number;
  /**
   * A watch that delivered nothing (no event, no bookmark) for this long is presumed dead and
   * replaced. Keep it above the server's bookmark interval (about a minute for kube-apiserver).
   */
  watchSilenceMs: number;
  /** How often the watchdog looks; defaults to a quarter of watchSilenceMs, at most 5 s. */
  watchdogIntervalMs?: number;
  /** A list taking longer than this is aborted and retried. */
  listTimeoutMs: number;
  /**
   * A watch that ends after delivering something, or after living this long, was healthy: the
   * next one starts at once and the backoff resets. Anything shorter counts as a failure.
   */
  healthyWatchMs: number;
  backoff: BackoffOptions;
}

export const defaultReflectorTimings: ReflectorTimings = {
  resyncPeriodMs: 30 * 60_000,
  watchTimeoutSeconds: 300,
  watchTimeoutJitter: 0.2,
  watchSilenceMs: 3 * 60_000,
  listTimeoutMs: 60_000,
  healthyWatchMs: 5_000,
  backoff: defaultBackoff,
};

/** Counters for metrics and tests; they only grow. */
export interface ReflectorStats {
  lists: number;
  listFailures: number;
  watches: number;
  /** Watches that ended in an error, an unhealthy close or a watchdog abort. */
  watchFailures: number;
  /** 410 Gone answers (HTTP or ERROR event): the watch's resourceVersion was compacted away. */
  gone: number;
  watchdogAborts: number;
  resyncs: number;
  events: number;
}

export interface ReflectorConfig {
  /** For logs: "nodes", "peers". */
  resource: string;
  /** The collection's path, e.g. /api/v1/nodes. */
  path: string;
  list: Lister;
  watch: WatchClient;
  /**
   * Turns a watched object into the cached one (sets kind, drops fields nobody reads); null skips
   * it. `previous`: the cached object of the same name, whose unchanged parts the new one may share.
   */
  normalize: (raw: unknown, previous: KubeObject | undefined) => KubeObject | null;
  /** Called after each applied change; with the previous and current object for a modification. */
  onChange: ChangeListener;
  timings?: Partial<ReflectorTimings>;
  logger?: Logger;
  now?: () => number;
  random?: () => number;
}

type Ending = 'closed' | 'error' | 'gone' | 'stalled' | 'resync' | 'stopped';

interface WatchOutcome {
  ending: Ending;
  healthy: boolean;
}

/**
 * Keeps an in-memory copy of one cluster-scoped resource: list, then watch from the list's
 * resourceVersion, for as long as it runs. It never gives up and never crashes on API trouble:
 * failures are retried with exponential backoff, 410 Gone relists (deleting what vanished), a
 * silent watch is replaced, and a periodic relist repairs anything missed. While the API server
 * is away the cache keeps the last objects it saw.
 */
export class Reflector {
  private readonly cache = new Map<string, KubeObject>();
  private readonly timings: ReflectorTimings;
  private readonly logger: Logger;
  private readonly now: () => number;
  private readonly random: () => number;
  private readonly backoff: Backoff;
  readonly stats: ReflectorStats = {
    lists: 0,
    listFailures: 0,
    watches: 0,
    watchFailures: 0,
    gone: 0,
    watchdogAborts: 0,
    resyncs: 0,
    events: 0,
  };

  private resourceVersion = '';
  private hasSynced = false;
  private last = 0;
  private stopped = false;
  private running: Promise<void> | undefined;
  private resyncTimer: NodeJS.Timeout | undefined;
  private resyncDue = false;
  /** Ends the watch in progress (resync, stop); undefined between watches. */
  private endWatch: ((ending: Ending) => void) | undefined;
  /** Cuts short a backoff sleep or a list in progress when stopping. */
  private readonly stopController = new AbortController();
  private readonly syncWaiters: { resolve: () => void; reject: (e: Error) => void }[] = [];

  constructor(private readonly config: ReflectorConfig) {
    this.timings = { ...defaultReflectorTimings, ...config.timings };
    this.logger = config.logger ?? silentLogger;
    this.now = config.now ?? Date.now;
    this.random = config.random ?? Math.random;
    this.backoff = new Backoff(this.timings.backoff, this.random);
  }

  /** Starts the list/watch loop in the background. */
  start(): void {
    if (this.running || this.stopped) return;
    this.running = this.run().catch((e: unknown) => {
      // A bug, not API trouble: say so loudly rather than leave a dead reflector behind.
      this.logger.error({ resource: this.config.resource, err: describeError(e) }, 'reflector loop crashed');
    });
    this.resyncTimer = setInterval(() => this.requestResync(), this.timings.resyncPeriodMs);
    this.resyncTimer.unref?.();
  }

  /** Resolves after the first complete list; rejects if stopped before. */
  waitForSync(): Promise<void> {
    if (this.hasSynced) return Promise.resolve();
    if (this.stopped) return Promise.reject(new Error(`stopped before ${this.config.resource} were listed`));
    return new Promise((resolve, reject) => this.syncWaiters.push({ resolve, reject }));
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.resyncTimer);
    this.stopController.abort();
    this.endWatch?.('stopped');
    for (const w of this.syncWaiters.splice(0))
      w.reject(new Error(`stopped before ${this.config.resource} were listed`));
    await this.running;
  }

  objects(): KubeObject[] {
    return [...this.cache.values()];
  }

  synced(): boolean {
    return this.hasSynced;
  }

  lastSync(): number {
    return this.last;
  }

  /** Ends the current watch and relists now, as the periodic resync does. */
  requestResync(): void {
    this.resyncDue = true;
    this.endWatch?.('resync');
  }

  private async run(): Promise<void> {
    let needList = true;
    // After 410 Gone the API server's cache may be behind what we saw: read from etcd instead.
    let consistent = false;
    while (!this.stopped) {
      if (needList || this.resyncDue) {
        if (this.resyncDue && !needList) this.stats.resyncs++;
        this.resyncDue = false;
        if (!(await this.relist(consistent ? '' : '0'))) {
          await this.sleep(this.backoff.next());
          needList = true;
          continue;
        }
        needList = false;
        consistent = false;
      }
      const outcome = await this.watchOnce();
      if (this.stopped) break;
      if (outcome.ending === 'resync') continue;
      if (outcome.ending === 'gone') needList = consistent = true;
      if (outcome.healthy) {
        this.backoff.reset();
        continue;
      }
      this.stats.watchFailures++;
      await this.sleep(this.backoff.next());
    }
  }

  /** Lists and replaces the cache, emitting the deletes of objects that vanished. */
  private async relist(resourceVersion: '0' | ''): Promise<boolean> {
    this.stats.lists++;
    const signal = AbortSignal.any([this.stopController.signal, AbortSignal.timeout(this.timings.listTimeoutMs)]);
    let result: ListResult;
    try {
      result = await this.config.list(signal, resourceVersion);
    } catch (e) {
      if (this.stopped) return false;
      this.stats.listFailures++;
      this.logger.warn(
        { resource: this.config.resource, err: describeError(e), retry: this.backoff.attempts + 1 },
        `listing ${this.config.resource} failed; retrying with backoff`,
      );
      return false;
    }
    if (this.stopped) return false;
    let changed = false;
    const seen = new Set<string>();
    for (const raw of result.items) {
      const obj = this.config.normalize(raw, this.cache.get(nameOf(raw)));
      const name = obj?.metadata?.name;
      if (!obj || !name) continue;
      seen.add(name);
      const old = this.cache.get(name);
      if (!old || old.metadata?.resourceVersion !== obj.metadata?.resourceVersion || !obj.metadata?.resourceVersion)
        changed = true;
      this.cache.set(name, obj);
    }
    for (const name of [...this.cache.keys()]) {
      if (!seen.has(name)) {
        this.cache.delete(name);
        changed = true;
      }
    }
    this.resourceVersion = result.resourceVersion;
    this.last = this.now();
    this.logger.debug(
      { resource: this.config.resource, count: this.cache.size, resourceVersion: this.resourceVersion },
      'listed',
    );
    if (!this.hasSynced) {
      this.hasSynced = true;
      for (const w of this.syncWaiters.splice(0)) w.resolve();
      changed = true;
    }
    if (changed) this.config.onChange();
    return true;
  }

  private watchTimeoutSeconds(): number {
    const { watchTimeoutSeconds: t, watchTimeoutJitter: j } = this.timings;
    return Math.max(1, Math.round(t * (1 + j * (2 * this.random() - 1))));
  }

  /** One watch from the current resourceVersion, until it ends for any reason. */
  private watchOnce(): Promise<WatchOutcome> {
    this.stats.watches++;
    const started = this.now();
    let lastActivity = started;
    let delivered = 0;
    let settled = false;
    let controller: AbortController | undefined;
    const { resource } = this.config;

    return new Promise<WatchOutcome>((resolve) => {
      const finish = (ending: Ending, detail?: object) => {
        if (settled) return;
        settled = true;
        clearInterval(watchdog);
        this.endWatch = undefined;
        controller?.abort();
        const healthy = delivered > 0 || this.now() - started >= this.timings.healthyWatchMs;
        if (ending === 'gone') this.stats.gone++;
        if (ending === 'error' || ending === 'stalled' || ending === 'gone') {
          this.logger.warn(
            { resource, ending, resourceVersion: this.resourceVersion, ...detail },
            `watch of ${resource} ended`,
          );
        } else {
          this.logger.debug({ resource, ending }, `watch of ${resource} ended`);
        }
        resolve({ ending, healthy });
      };
      this.endWatch = finish;

      const silenceMs = this.timings.watchSilenceMs;
      const watchdog = setInterval(
        () => {
          if (this.now() - lastActivity <= silenceMs) return;
          this.stats.watchdogAborts++;
          // Abandoning is enough even when the request never got its headers (no controller
          // yet): every later callback of this attempt is ignored and the controller is
          // aborted as soon as it shows up.
          finish('stalled', { silentMs: this.now() - lastActivity });
        },
        this.timings.watchdogIntervalMs ?? Math.min(5_000, Math.max(10, silenceMs / 4)),
      );

      const onEvent = (type: string, raw: unknown) => {
        if (settled) return;
        lastActivity = this.now();
        delivered++;
        if (type === 'ERROR') {
          const status = raw as { code?: number; reason?: string; message?: string } | null;
          if (status?.code === 410 || status?.reason === 'Expired' || status?.reason === 'Gone')
            finish('gone', { code: 410 });
          else finish('error', { code: status?.code, reason: status?.reason, message: status?.message });
          return;
        }
        const rv = (raw as KubeObject | null)?.metadata?.resourceVersion;
        if (type === 'BOOKMARK') {
          if (rv) this.resourceVersion = rv;
          this.last = this.now();
          return;
        }
        this.apply(type, raw);
        if (rv) this.resourceVersion = rv;
      };

      const onDone = (err: unknown) => {
        if (settled) return;
        if (err === null || err === undefined) finish('closed');
        else if (statusCodeOf(err) === 410) finish('gone', { code: 410 });
        else finish('error', { err: describeError(err) });
      };

      const query = {
        resourceVersion: this.resourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds: this.watchTimeoutSeconds(),
      };
      this.config.watch.watch(this.config.path, query, onEvent, onDone).then(
        (c) => {
          controller = c;
          if (settled) c.abort();
        },
        (e: unknown) => finish('error', { err: describeError(e) }),
      );
    });
  }

  private apply(type: string, raw: unknown): void {
    const previous = this.cache.get(nameOf(raw));
    const obj = this.config.normalize(raw, previous);
    const name = obj?.metadata?.name;
    if (!obj || !name) {
      this.logger.warn({ resource: this.config.resource, type }, 'ignoring a watch event without an object name');
      return;
    }
    if (type === 'ADDED' || type === 'MODIFIED') this.cache.set(name, obj);
    else if (type === 'DELETED') this.cache.delete(name);
    else {
      this.logger.warn({ resource: this.config.resource, type }, 'ignoring a watch event of unknown type');
      return;
    }
    this.stats.events++;
    this.last = this.now();
    this.config.onChange(type === 'MODIFIED' && previous ? { previous, current: obj } : undefined);
  }

  private sleep(ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.stopController.signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.stopController.signal.addEventListener('abort', done);
    });
  }
}

function nameOf(raw: unknown): string {
  const name = (raw as KubeObject | null)?.metadata?.name;
  return typeof name === 'string' ? name : '';
}
