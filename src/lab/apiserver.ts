/**
 * A small Kubernetes API server for tests: the real HTTP API for what kg uses (list, watch and
 * get of Nodes and Peers, merge patches of Nodes), plus controls to break it the ways a real API
 * server breaks: compaction (410 Gone), stalled and dropped watches, 5xx answers, and going away
 * for a while on the same port. The real @kubernetes/client-node talks to it over
 * http://127.0.0.1:PORT without auth.
 *
 * Semantics follow kube-apiserver where kg can tell the difference:
 * - one resourceVersion counter for all objects (etcd's revision); each object carries the
 *   version of its last change, each list the current one;
 * - `?watch=true&resourceVersion=N` streams newline-delimited `{"type","object"}` events after
 *   N; N older than the retained history answers 410 (an ERROR event by default, as the real
 *   server does, or an HTTP 410 Status: see `goneAs`); no N (or "0") starts with ADDED for
 *   every current object;
 * - `allowWatchBookmarks=true` gets BOOKMARK events every `bookmarkIntervalMs`;
 *   `timeoutSeconds=T` ends the stream cleanly after T seconds;
 * - Node list items carry no kind/apiVersion (core lists omit them); Peer items do.
 *
 * For the lab (`kg lab`), it also takes writes over HTTP the way kube-apiserver does (POST to a
 * collection, PUT/PATCH/DELETE of an item, Nodes and Peers alike), listens on a chosen address
 * and optionally on a Unix socket (reachable from every network namespace), and reports each
 * change through `onChange` so it can be persisted.
 *
 * Usage:
 *   const api = await FakeApiServer.start();
 *   api.addNode(node('a', {...}));
 *   const source = new KubernetesSource({ kubeConfig: api.kubeConfig() });
 *   ...
 *   await api.close();
 */
import { KubeConfig } from '@kubernetes/client-node';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { rmSync } from 'node:fs';
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import type { KubeObject } from '../model/parse.js';
import { LeaseStore } from './apiserver-leases.js';

export type Resource = 'nodes' | 'peers';

/** What a request was, for `count()`. `reset` is a connection accepted and reset while stopped in 'reset' mode. */
export type RequestKind =
  | 'list-nodes'
  | 'watch-nodes'
  | 'get-node'
  | 'patch-node'
  | 'list-peers'
  | 'watch-peers'
  | 'get-peer'
  | 'write'
  | 'other'
  | 'reset';

export interface FakeApiServerOptions {
  /** Port to listen on; 0 (default) picks a free one, kept across stop()/restart(). */
  port?: number;
  /** Watch events kept for resuming watches; older resourceVersions get 410. Default 1000. */
  historyLimit?: number;
  /** Interval of BOOKMARK events on watches that allow them; 0 sends none. Default 1000 ms. */
  bookmarkIntervalMs?: number;
  /** How a watch from a compacted resourceVersion is refused: 'event' (default) or 'status' (HTTP 410). */
  goneAs?: 'event' | 'status';
  /** Address to listen on; default 127.0.0.1. */
  host?: string;
  /** Also serve on this Unix socket (removed first if a stale one is there). */
  socketPath?: string;
  /** Called after every change to the objects (for persistence). */
  onChange?: () => void;
  /** Objects to start with (Nodes and Peers, by kind). */
  objects?: readonly KubeObject[];
  /**
   * A restart: the `objects` keep their resourceVersion and uid, and the revision goes on from
   * here (apiserver-state.ts). Without it the objects are created anew.
   */
  revision?: number;
}

/** A watch event as the server streams it. */
export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: KubeObject | Status;
}

export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure';
  message: string;
  reason: string;
  code: number;
}

interface HistoryEntry {
  rv: number;
  resource: Resource;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: KubeObject;
}

interface Watcher {
  resource: Resource;
  res: ServerResponse;
  stalled: boolean;
  timers: NodeJS.Timeout[];
}

const types: Record<Resource, { apiVersion: string; kind: string; listKind: string; itemsCarryType: boolean }> = {
  nodes: { apiVersion: 'v1', kind: 'Node', listKind: 'NodeList', itemsCarryType: false },
  peers: { apiVersion: 'kilo.squat.ai/v1alpha1', kind: 'Peer', listKind: 'PeerList', itemsCarryType: true },
};

const collectionPaths: Record<string, Resource> = {
  '/api/v1/nodes': 'nodes',
  '/apis/kilo.squat.ai/v1alpha1/peers': 'peers',
};

function clone<T>(value: T): T {
  return structuredClone(value);
}

function status(code: number, reason: string, message: string): Status {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
}

/** RFC 7386 JSON merge patch: objects merge recursively, null deletes, anything else replaces. */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return clone(patch);
  const out: Record<string, unknown> =
    typeof target === 'object' && target !== null && !Array.isArray(target)
      ? { ...(target as Record<string, unknown>) }
      : {};
  for (const [key, value] of Object.entries(patch as Record<string, unknown>)) {
    if (value === null) delete out[key];
    else out[key] = applyMergePatch(out[key], value);
  }
  return out;
}

/** A fake kube-apiserver on 127.0.0.1. Create with `FakeApiServer.start()`. */
export class FakeApiServer {
  private readonly objects: Record<Resource, Map<string, KubeObject>> = { nodes: new Map(), peers: new Map() };
  private history: HistoryEntry[] = [];
  /** Watches may resume from this resourceVersion or later; older ones get 410. */
  private floor = 0;
  private rv = 1;
  private readonly watchers = new Set<Watcher>();
  private readonly sockets = new Set<Socket>();
  private readonly counts = new Map<RequestKind, number>();
  private readonly queries = new Map<RequestKind, URLSearchParams[]>();
  private http: Server | undefined;
  private unix: Server | undefined;
  private readonly host: string;
  private readonly socketPath: string | undefined;
  private readonly onChange: (() => void) | undefined;
  private resetter: NetServer | undefined;
  private failStatus: number | null = null;
  private boundPort = 0;
  private readonly historyLimit: number;
  private readonly bookmarkIntervalMs: number;
  /** How a watch from a compacted resourceVersion is refused; may be changed between requests. */
  goneAs: 'event' | 'status';
  /** coordination.k8s.io/v1 Leases, sharing this server's resourceVersion counter. */
  readonly leases = new LeaseStore({
    nextResourceVersion: () => ++this.rv,
    currentResourceVersion: () => this.rv,
    fail: (res, code, reason, message) => this.fail(res, code, reason, message),
    reply: (res, code, body) => this.reply(res, code, body),
  });

  private constructor(options: FakeApiServerOptions) {
    this.boundPort = options.port ?? 0;
    this.historyLimit = options.historyLimit ?? 1000;
    this.bookmarkIntervalMs = options.bookmarkIntervalMs ?? 1000;
    this.goneAs = options.goneAs ?? 'event';
    this.host = options.host ?? '127.0.0.1';
    this.socketPath = options.socketPath;
    this.onChange = options.onChange;
    if (options.revision !== undefined) this.restore(options.objects ?? [], options.revision);
    else for (const o of options.objects ?? []) this.create(o.kind === 'Peer' ? 'peers' : 'nodes', o);
  }

  /**
   * As etcd keeps a restarted kube-apiserver's objects and revision: the watch cache starts empty
   * at that revision, so a watch resumed from before the restart gets 410 and the client re-lists.
   */
  private restore(objects: readonly KubeObject[], revision: number): void {
    for (const o of objects) {
      const resource = o.kind === 'Peer' ? 'peers' : 'nodes';
      const rv = Number(o.metadata?.resourceVersion);
      const stored = this.stored(resource, o, Number.isSafeInteger(rv) ? rv : revision, this.uidOf(o));
      this.objects[resource].set(stored.metadata!.name!, stored);
      revision = Math.max(revision, Number(stored.metadata!.resourceVersion));
    }
    this.rv = this.floor = revision;
  }

  /** Starts a server and resolves once it listens. */
  static async start(options: FakeApiServerOptions = {}): Promise<FakeApiServer> {
    const server = new FakeApiServer(options);
    await server.listen();
    return server;
  }

  get port(): number {
    return this.boundPort;
  }

  get url(): string {
    const host = this.host === '0.0.0.0' || this.host === '::' ? '127.0.0.1' : this.host;
    return `http://${host.includes(':') ? `[${host}]` : host}:${this.boundPort}`;
  }

  /** Every stored object, Nodes then Peers, each with kind and apiVersion (a List's items). */
  allObjects(): KubeObject[] {
    return [...this.objects.nodes.values(), ...this.objects.peers.values()].map(clone);
  }

  /** A client configuration pointing at this server (no auth). */
  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromClusterAndUser({ name: 'fake', server: this.url, skipTLSVerify: true }, { name: 'fake' });
    return kc;
  }

  /** The same as a kubeconfig file's text, for processes started with --kubeconfig. */
  kubeconfigYaml(): string {
    return [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: fake',
      '  cluster:',
      `    server: ${this.url}`,
      '    insecure-skip-tls-verify: true',
      'users:',
      '- name: fake',
      '  user: {}',
      'contexts:',
      '- name: fake',
      '  context: {cluster: fake, user: fake}',
      'current-context: fake',
      '',
    ].join('\n');
  }

  // ---- objects -------------------------------------------------------------------------

  /** The current resourceVersion (of the last change). */
  get resourceVersion(): string {
    return String(this.rv);
  }

  /** Creates a Node; throws if it exists. Returns the stored object (with resourceVersion). */
  addNode(obj: KubeObject): KubeObject {
    return this.create('nodes', obj);
  }

  /** Replaces a Node entirely; throws if it does not exist. */
  updateNode(obj: KubeObject): KubeObject {
    return this.replace('nodes', obj);
  }

  /** Merge-patches a Node (null deletes), as a PATCH request would. */
  patchNode(name: string, patch: unknown): KubeObject {
    return this.patch('nodes', name, patch);
  }

  /** Deletes a Node; throws if it does not exist. */
  deleteNode(name: string): void {
    this.remove('nodes', name);
  }

  addPeer(obj: KubeObject): KubeObject {
    return this.create('peers', obj);
  }

  updatePeer(obj: KubeObject): KubeObject {
    return this.replace('peers', obj);
  }

  patchPeer(name: string, patch: unknown): KubeObject {
    return this.patch('peers', name, patch);
  }

  deletePeer(name: string): void {
    this.remove('peers', name);
  }

  /** A copy of a stored Node, or undefined. */
  node(name: string): KubeObject | undefined {
    const o = this.objects.nodes.get(name);
    return o && clone(o);
  }

  peer(name: string): KubeObject | undefined {
    const o = this.objects.peers.get(name);
    return o && clone(o);
  }

  nodeNames(): string[] {
    return [...this.objects.nodes.keys()].sort();
  }

  peerNames(): string[] {
    return [...this.objects.peers.keys()].sort();
  }

  // ---- faults --------------------------------------------------------------------------

  /**
   * Forgets the watch history: every resourceVersion before now is gone. Open watches receive
   * an ERROR event with code 410 and are closed (the real server does this when its watch cache
   * falls behind); a watch or resume from an older version gets 410 too.
   */
  compact(): void {
    this.floor = this.rv;
    this.history = [];
    for (const w of [...this.watchers]) {
      if (w.stalled) continue;
      this.send(w, { type: 'ERROR', object: status(410, 'Expired', 'too old resource version: compacted') });
      this.endWatch(w);
    }
  }

  /**
   * Makes every open watch go silent: the connection stays open, nothing more is sent (no
   * events, no bookmarks, no timeout). Watches opened later behave normally.
   */
  stallWatches(): void {
    for (const w of this.watchers) {
      w.stalled = true;
      for (const t of w.timers) clearTimeout(t);
      w.timers = [];
    }
  }

  /** Cuts every open watch connection (TCP reset), as a load balancer or a crash would. */
  dropWatches(): void {
    for (const w of [...this.watchers]) {
      this.watchers.delete(w);
      for (const t of w.timers) clearTimeout(t);
      w.res.socket?.destroy();
    }
  }

  /** From now on every request is answered with this HTTP status (e.g. 503); null heals. */
  failRequests(code: number | null): void {
    this.failStatus = code;
  }

  /** Watches currently open (stalled ones included). */
  openWatches(resource?: Resource): number {
    let n = 0;
    for (const w of this.watchers) if (!resource || w.resource === resource) n++;
    return n;
  }

  /**
   * Takes the API server away, keeping its objects and history; changes made meanwhile through
   * this API are seen by clients after `restart()`, as writes by others would be. Mode 'refuse'
   * (default) closes the port: connections are refused. Mode 'reset' keeps the port open and
   * resets every connection, counting each as a 'reset' request — a way to count a client's
   * attempts while the server is away.
   */
  async stop(mode: 'refuse' | 'reset' = 'refuse'): Promise<void> {
    await this.closeListeners();
    if (mode === 'reset') {
      const resetter = createNetServer((socket) => {
        this.bump('reset');
        socket.resetAndDestroy();
      });
      await new Promise<void>((resolve, reject) => {
        resetter.once('error', reject);
        resetter.listen(this.boundPort, '127.0.0.1', () => resolve());
      });
      this.resetter = resetter;
    }
  }

  /** Brings the API server back on the same port. */
  async restart(): Promise<void> {
    await this.closeListeners();
    await this.listen();
  }

  /** Stops for good: closes the port and every connection. */
  async close(): Promise<void> {
    await this.closeListeners();
  }

  // ---- counting ------------------------------------------------------------------------

  /** Requests seen of the given kinds (all kinds when none given) since start or resetCounts(). */
  count(...kinds: RequestKind[]): number {
    let n = 0;
    for (const [kind, c] of this.counts) if (kinds.length === 0 || kinds.includes(kind)) n += c;
    return n;
  }

  resetCounts(): void {
    this.counts.clear();
  }

  /** The query parameters of the last (up to 100) requests of a kind, oldest first. */
  queriesOf(kind: RequestKind): URLSearchParams[] {
    return [...(this.queries.get(kind) ?? [])];
  }

  // ---- internals -----------------------------------------------------------------------

  private serve(): Server {
    const server = createServer((req, res) => this.handle(req, res));
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    return server;
  }

  private async listen(): Promise<void> {
    const server = this.serve();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.boundPort, this.host, () => resolve());
    });
    const address = server.address();
    if (typeof address === 'object' && address) this.boundPort = address.port;
    this.http = server;
    if (this.socketPath) {
      const path = this.socketPath;
      rmSync(path, { force: true });
      const unix = this.serve();
      await new Promise<void>((resolve, reject) => {
        unix.once('error', reject);
        unix.listen(path, () => resolve());
      });
      this.unix = unix;
    }
  }

  private async closeListeners(): Promise<void> {
    const http = this.http;
    const resetter = this.resetter;
    const unix = this.unix;
    this.http = undefined;
    this.resetter = undefined;
    this.unix = undefined;
    for (const w of this.watchers) for (const t of w.timers) clearTimeout(t);
    this.watchers.clear();
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    await Promise.all([
      http && new Promise<void>((resolve) => http.close(() => resolve())),
      resetter && new Promise<void>((resolve) => resetter.close(() => resolve())),
      unix && new Promise<void>((resolve) => unix.close(() => resolve())),
    ]);
  }

  private bump(kind: RequestKind): void {
    this.counts.set(kind, (this.counts.get(kind) ?? 0) + 1);
  }

  private stored(resource: Resource, obj: KubeObject, rv: number, uid?: string): KubeObject {
    const name = obj.metadata?.name;
    if (!name) throw new Error(`fake apiserver: a ${types[resource].kind} needs metadata.name`);
    const out = clone(obj) as KubeObject & { metadata: Record<string, unknown> };
    out.apiVersion = types[resource].apiVersion;
    out.kind = types[resource].kind;
    out.metadata = { ...out.metadata, name, resourceVersion: String(rv), uid: uid ?? randomUUID() };
    return out;
  }

  private uidOf(obj: KubeObject | undefined): string | undefined {
    return (obj?.metadata as { uid?: string } | undefined)?.uid;
  }

  private create(resource: Resource, obj: KubeObject): KubeObject {
    const name = obj.metadata?.name ?? '';
    if (this.objects[resource].has(name))
      throw new Error(`fake apiserver: ${types[resource].kind} ${name} already exists`);
    const stored = this.stored(resource, obj, ++this.rv);
    this.objects[resource].set(name, stored);
    this.record(resource, 'ADDED', stored);
    return clone(stored);
  }

  private replace(resource: Resource, obj: KubeObject): KubeObject {
    const name = obj.metadata?.name ?? '';
    const old = this.objects[resource].get(name);
    if (!old) throw new Error(`fake apiserver: ${types[resource].kind} ${name} does not exist`);
    const stored = this.stored(resource, obj, ++this.rv, this.uidOf(old));
    this.objects[resource].set(name, stored);
    this.record(resource, 'MODIFIED', stored);
    return clone(stored);
  }

  private patch(resource: Resource, name: string, patch: unknown): KubeObject {
    const old = this.objects[resource].get(name);
    if (!old) throw new Error(`fake apiserver: ${types[resource].kind} ${name} does not exist`);
    const merged = applyMergePatch(old, patch) as KubeObject;
    merged.metadata = { ...merged.metadata, name };
    return this.replace(resource, merged);
  }

  private remove(resource: Resource, name: string): void {
    const old = this.objects[resource].get(name);
    if (!old) throw new Error(`fake apiserver: ${types[resource].kind} ${name} does not exist`);
    this.objects[resource].delete(name);
    // The deleted object carries the deletion's resourceVersion, as kube-apiserver's does.
    const gone = this.stored(resource, old, ++this.rv, this.uidOf(old));
    this.record(resource, 'DELETED', gone);
  }

  private record(resource: Resource, type: HistoryEntry['type'], object: KubeObject): void {
    const entry: HistoryEntry = { rv: this.rv, resource, type, object: clone(object) };
    this.history.push(entry);
    while (this.history.length > this.historyLimit) this.floor = this.history.shift()!.rv;
    for (const w of this.watchers) {
      if (w.resource === resource && !w.stalled) this.send(w, { type, object: entry.object });
    }
    this.onChange?.();
  }

  private send(w: Watcher, event: WatchEvent): void {
    w.res.write(`${JSON.stringify(event)}\n`);
  }

  private endWatch(w: Watcher): void {
    this.watchers.delete(w);
    for (const t of w.timers) clearTimeout(t);
    w.res.end();
  }

  private reply(res: ServerResponse, code: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  }

  private fail(res: ServerResponse, code: number, reason: string, message: string): void {
    this.reply(res, code, status(code, reason, message));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://fake');
    const path = url.pathname.replace(/\/+$/, '');
    const method = req.method ?? 'GET';
    const collection = collectionPaths[path];
    const slash = path.lastIndexOf('/');
    const itemOf = collectionPaths[path.slice(0, slash)];
    const itemName = decodeURIComponent(path.slice(slash + 1));
    const watching = url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1';

    let kind: RequestKind = 'other';
    if (collection && method === 'GET') kind = `${watching ? 'watch' : 'list'}-${collection}` as RequestKind;
    else if (itemOf && method === 'GET') kind = itemOf === 'nodes' ? 'get-node' : 'get-peer';
    else if (itemOf === 'nodes' && method === 'PATCH') kind = 'patch-node';
    else if ((collection && method === 'POST') || (itemOf && ['PUT', 'PATCH', 'DELETE'].includes(method)))
      kind = 'write';
    this.bump(kind);
    const seen = this.queries.get(kind) ?? [];
    seen.push(new URLSearchParams(url.searchParams));
    if (seen.length > 100) seen.shift();
    this.queries.set(kind, seen);

    if (this.failStatus !== null) {
      req.resume();
      this.fail(res, this.failStatus, 'InternalError', `fake apiserver answers every request with ${this.failStatus}`);
      return;
    }
    if (kind === 'other' && this.leases.handle(req, res, url)) return;
    switch (kind) {
      case 'list-nodes':
      case 'list-peers':
        return this.list(collection!, res);
      case 'watch-nodes':
      case 'watch-peers':
        return this.watch(collection!, url.searchParams, res);
      case 'get-node':
      case 'get-peer': {
        const obj = this.objects[itemOf!].get(itemName);
        if (!obj) return this.fail(res, 404, 'NotFound', `${itemOf} "${itemName}" not found`);
        return this.reply(res, 200, obj);
      }
      case 'patch-node':
        return this.patchRequest(itemName, req, res);
      case 'write':
        return this.writeRequest(method, collection ?? itemOf!, collection ? null : itemName, req, res);
      default:
        req.resume();
        if (collection || itemOf)
          return this.fail(res, 405, 'MethodNotAllowed', `${method} is not supported by the fake apiserver`);
        return this.fail(res, 404, 'NotFound', `the server could not find the requested resource (${path})`);
    }
  }

  private list(resource: Resource, res: ServerResponse): void {
    const t = types[resource];
    const items = [...this.objects[resource].values()].map((o) => {
      if (t.itemsCarryType) return o;
      const { apiVersion: _a, kind: _k, ...rest } = o;
      return rest;
    });
    this.reply(res, 200, {
      apiVersion: t.apiVersion,
      kind: t.listKind,
      metadata: { resourceVersion: String(this.rv) },
      items,
    });
  }

  private watch(resource: Resource, query: URLSearchParams, res: ServerResponse): void {
    const from = query.get('resourceVersion');
    const resume = from !== null && from !== '' && from !== '0';
    const fromRV = resume ? Number(from) : 0;
    if (resume && !Number.isSafeInteger(fromRV)) {
      return this.fail(res, 400, 'BadRequest', `resourceVersion ${JSON.stringify(from)} is not a number`);
    }
    const tooOld = resume && fromRV < this.floor;
    if (tooOld && this.goneAs === 'status') {
      return this.fail(res, 410, 'Expired', `too old resource version: ${fromRV} (${this.floor})`);
    }
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    res.flushHeaders();
    const w: Watcher = { resource, res, stalled: false, timers: [] };
    if (tooOld) {
      this.send(w, {
        type: 'ERROR',
        object: status(410, 'Expired', `too old resource version: ${fromRV} (${this.floor})`),
      });
      res.end();
      return;
    }
    if (resume) {
      for (const e of this.history)
        if (e.resource === resource && e.rv > fromRV) this.send(w, { type: e.type, object: e.object });
    } else {
      for (const o of this.objects[resource].values()) this.send(w, { type: 'ADDED', object: o });
    }
    this.watchers.add(w);
    res.on('close', () => {
      this.watchers.delete(w);
      for (const t of w.timers) clearTimeout(t);
    });
    const timeoutSeconds = Number(query.get('timeoutSeconds') ?? '0');
    if (timeoutSeconds > 0) w.timers.push(setTimeout(() => this.endWatch(w), timeoutSeconds * 1000));
    if (query.get('allowWatchBookmarks') === 'true' && this.bookmarkIntervalMs > 0) {
      const t = types[resource];
      const tick = (): void => {
        this.send(w, {
          type: 'BOOKMARK',
          object: { apiVersion: t.apiVersion, kind: t.kind, metadata: { resourceVersion: String(this.rv) } },
        });
        w.timers.push(setTimeout(tick, this.bookmarkIntervalMs));
      };
      w.timers.push(setTimeout(tick, this.bookmarkIntervalMs));
    }
  }

  /** POST (create), PUT (replace), PATCH (merge) and DELETE, answering as kube-apiserver does. */
  private writeRequest(
    method: string,
    resource: Resource,
    name: string | null,
    req: IncomingMessage,
    res: ServerResponse,
  ): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const kind = types[resource].kind;
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = null;
      if (method !== 'DELETE') {
        try {
          body = JSON.parse(text);
        } catch (e) {
          return this.fail(res, 400, 'BadRequest', `${method} body is not JSON: ${(e as Error).message}`);
        }
        if (typeof body !== 'object' || body === null || Array.isArray(body)) {
          return this.fail(res, 400, 'BadRequest', `${method} body must be a JSON object`);
        }
      }
      const obj = body as KubeObject;
      const target = name ?? obj?.metadata?.name ?? '';
      const exists = this.objects[resource].has(target);
      if (method === 'POST' && exists)
        return this.fail(res, 409, 'AlreadyExists', `${resource} "${target}" already exists`);
      if (method !== 'POST' && !exists) return this.fail(res, 404, 'NotFound', `${resource} "${target}" not found`);
      if (!target) return this.fail(res, 422, 'Invalid', `${kind}: metadata.name is required`);
      if (method === 'POST') return this.reply(res, 201, this.create(resource, obj));
      if (method === 'PUT')
        return this.reply(res, 200, this.replace(resource, { ...obj, metadata: { ...obj.metadata, name: target } }));
      if (method === 'PATCH') return this.reply(res, 200, this.patch(resource, target, obj));
      this.remove(resource, target);
      this.reply(res, 200, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 200 });
    });
  }

  private patchRequest(name: string, req: IncomingMessage, res: ServerResponse): void {
    const contentType = (req.headers['content-type'] ?? '').split(';')[0]!.trim();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (contentType !== 'application/merge-patch+json') {
        return this.fail(
          res,
          415,
          'UnsupportedMediaType',
          `the fake apiserver takes only application/merge-patch+json, not ${contentType}`,
        );
      }
      if (!this.objects.nodes.has(name)) return this.fail(res, 404, 'NotFound', `nodes "${name}" not found`);
      let patch: unknown;
      try {
        patch = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch (e) {
        return this.fail(res, 400, 'BadRequest', `patch is not JSON: ${(e as Error).message}`);
      }
      if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) {
        return this.fail(res, 400, 'BadRequest', 'a merge patch of a Node must be a JSON object');
      }
      this.reply(res, 200, this.patch('nodes', name, patch));
    });
  }
}

/**
 * Polls `condition` until it holds, failing with `what` after `timeoutMs`. A liveness wait, not
 * a timing assertion: the timeout is far above what the condition needs.
 */
export async function waitUntil(
  what: string,
  condition: () => boolean,
  timeoutMs = 10_000,
  intervalMs = 10,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
