/**
 * Watches as kube-apiserver streams them: newline-delimited events, a resume from a version in
 * history or 410 below it, selectors (an object leaving a watcher's selection is DELETED to it),
 * bookmarks and `timeoutSeconds`; and the faults tests inject (compaction, stalls, resets).
 */
import type { ServerResponse } from 'node:http';
import type { KubeObject } from '../../../src/model/parse.js';
import { selectorOf } from './apiserver-list.js';
import { apiVersionOf, type ResourceType } from './apiserver-resources.js';
import { ApiError, status, type Status } from './apiserver-status.js';
import { metaOf, type HistoryEntry, type ObjectStore } from './apiserver-store.js';

/** A watch event as the server streams it. */
export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: KubeObject | Status;
}

interface Watcher {
  resource: string;
  namespace: string | undefined;
  matches: (o: KubeObject) => boolean;
  res: ServerResponse;
  stalled: boolean;
  timers: NodeJS.Timeout[];
}

export class Watches {
  private readonly watchers = new Set<Watcher>();

  constructor(
    private readonly store: ObjectStore,
    private readonly bookmarkIntervalMs: number,
  ) {
    store.onRecord((e) => {
      for (const w of this.watchers) if (w.resource === e.resource && !w.stalled) this.deliver(w, e);
    });
  }

  /** Serves `?watch=true` on a collection; `goneAs` says how a compacted resourceVersion is refused. */
  open(
    type: ResourceType,
    namespace: string | undefined,
    query: URLSearchParams,
    res: ServerResponse,
    goneAs: 'event' | 'status',
  ): void {
    const matches = selectorOf(query, type);
    const from = query.get('resourceVersion');
    const resume = from !== null && from !== '' && from !== '0';
    const fromRV = resume ? Number(from) : 0;
    if (resume && !Number.isSafeInteger(fromRV))
      throw new ApiError(400, 'BadRequest', `resourceVersion ${JSON.stringify(from)} is not a number`);
    const floor = this.store.floor;
    const tooOld = resume && fromRV < floor;
    if (tooOld && goneAs === 'status')
      throw new ApiError(410, 'Expired', `too old resource version: ${fromRV} (${floor})`);
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    res.flushHeaders();
    const w: Watcher = { resource: type.name, namespace, matches, res, stalled: false, timers: [] };
    if (tooOld) {
      this.send(w, { type: 'ERROR', object: status(410, 'Expired', `too old resource version: ${fromRV} (${floor})`) });
      res.end();
      return;
    }
    if (resume) for (const e of this.store.since(type, fromRV)) this.deliver(w, e);
    else
      for (const [, o] of this.store.sorted(type, namespace))
        if (matches(o)) this.send(w, { type: 'ADDED', object: o });
    this.watchers.add(w);
    res.on('close', () => {
      this.watchers.delete(w);
      for (const t of w.timers) clearTimeout(t);
    });
    const timeoutSeconds = Number(query.get('timeoutSeconds') ?? '0');
    if (timeoutSeconds > 0) w.timers.push(setTimeout(() => this.end(w), timeoutSeconds * 1000));
    if (query.get('allowWatchBookmarks') === 'true' && this.bookmarkIntervalMs > 0) {
      const tick = (): void => {
        this.send(w, {
          type: 'BOOKMARK',
          object: {
            apiVersion: apiVersionOf(type),
            kind: type.kind,
            metadata: { resourceVersion: String(this.store.rv) },
          },
        });
        w.timers.push(setTimeout(tick, this.bookmarkIntervalMs));
      };
      w.timers.push(setTimeout(tick, this.bookmarkIntervalMs));
    }
  }

  /** Sends an entry as the watcher's selectors see it. */
  private deliver(w: Watcher, e: HistoryEntry): void {
    const inScope = (o: KubeObject) =>
      (w.namespace === undefined || metaOf(o).namespace === w.namespace) && w.matches(o);
    const now = e.type !== 'DELETED' && inScope(e.object);
    const before = e.type !== 'ADDED' && inScope(e.previous ?? e.object);
    if (now && before) this.send(w, { type: 'MODIFIED', object: e.object });
    else if (now) this.send(w, { type: 'ADDED', object: e.object });
    else if (before) this.send(w, { type: 'DELETED', object: e.object });
  }

  private send(w: Watcher, event: WatchEvent): void {
    w.res.write(`${JSON.stringify(event)}\n`);
  }

  private end(w: Watcher): void {
    this.watchers.delete(w);
    for (const t of w.timers) clearTimeout(t);
    w.res.end();
  }

  /** Open watches (stalled ones included), of one resource (plural) or all. */
  count(resource?: string): number {
    let n = 0;
    for (const w of this.watchers) if (!resource || w.resource === resource) n++;
    return n;
  }

  /** Every live watch gets a 410 ERROR event and is closed (after the store's compaction). */
  expireAll(): void {
    for (const w of [...this.watchers]) {
      if (w.stalled) continue;
      this.send(w, { type: 'ERROR', object: status(410, 'Expired', 'too old resource version: compacted') });
      this.end(w);
    }
  }

  /** Every open watch goes silent: no events, bookmarks or timeout. */
  stallAll(): void {
    for (const w of this.watchers) {
      w.stalled = true;
      for (const t of w.timers) clearTimeout(t);
      w.timers = [];
    }
  }

  /** Every open watch connection is reset. */
  dropAll(): void {
    for (const w of [...this.watchers]) {
      this.watchers.delete(w);
      for (const t of w.timers) clearTimeout(t);
      w.res.socket?.destroy();
    }
  }

  /** Forgets every watch (their sockets are being closed). */
  clear(): void {
    for (const w of this.watchers) for (const t of w.timers) clearTimeout(t);
    this.watchers.clear();
  }
}
