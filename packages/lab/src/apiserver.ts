/**
 * A Kubernetes API server for tests and the lab, as strict as kube-apiserver where a client can
 * tell: the real @kubernetes/client-node, Kilo's own agent (client-go) and kubectl talk to it over
 * http://HOST:PORT without auth. Plus controls to break it the ways a real API server breaks:
 * compaction (410 Gone), stalled and dropped watches, 5xx answers, going away on the same port.
 *
 * Semantics follow kube-apiserver:
 * - one resourceVersion counter for all objects (etcd's revision); each object carries the
 *   version of its last change, each list the current one;
 * - lists: label and field selectors; `limit`/`continue` paging whose later pages show the
 *   first page's version (410 once it is compacted); `resourceVersion=0` is served whole, as
 *   the watch cache serves it (limit ignored);
 * - `?watch=true&resourceVersion=N` streams newline-delimited `{"type","object"}` events after
 *   N; N older than the retained history answers 410 (an ERROR event by default, as the real
 *   server does, or an HTTP 410 Status: see `goneAs`); no N (or "0") starts with ADDED for
 *   every current object; `allowWatchBookmarks=true` gets BOOKMARKs every `bookmarkIntervalMs`;
 *   `timeoutSeconds=T` ends the stream cleanly after T seconds;
 * - writes: POST, PUT (409 on a stale resourceVersion), PATCH as merge, strategic merge (not of
 *   custom resources: 415) and JSON patch (422 when it does not apply), DELETE (with
 *   preconditions); 415 for a body type it does not take, 422 for an invalid object;
 * - the CustomResourceDefinitions of manifests/ under apiextensions.k8s.io/v1, namespaces,
 *   (empty) pods and events, discovery and OpenAPI for kubectl;
 * - Services with clusterIPs from `serviceCidr`, Endpoints and EndpointSlices (apiserver-services.ts);
 * - Tables (server-side printing) for a list or get that asks for one, with kube-apiserver's
 *   columns: Nodes' STATUS, ROLES, AGE, VERSION; a CRD's printer columns (apiserver-table.ts);
 * - core list items carry no kind/apiVersion; custom resources' items do.
 *
 * More resource types: `resources` in the options (storage, every verb and discovery come with
 * them); other paths: `routes`, consulted before the built-in ones. Every change is reported
 * through `onChange` (the lab persists the objects).
 *
 * Usage:
 *   const api = await TestApiServer.start();
 *   api.addNode(node('a', {...}));
 *   const source = new KubernetesSource({ kubeConfig: kubeConfigFor(api) }); // apiserver-kubeconfig.ts
 *   ...
 *   await api.close();
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { readFileSync, rmSync } from 'node:fs';
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from '../../../src/model/parse.js';
import { discovery } from './apiserver-discovery.js';
import { repository } from './repository.js';
import { leasesType } from './apiserver-leases.js';
import {
  createRequest,
  deleteRequest,
  getRequest,
  listRequest,
  patchRequest,
  replaceRequest,
  type ResourceRequest,
} from './apiserver-requests.js';
import {
  builtinNamespaces,
  builtinResources,
  crdsType,
  namespacesType,
  nodesType,
  parsePath,
  peersType,
  type ResourceType,
  type Target,
} from './apiserver-resources.js';
import { defaultServiceCidr, endpointSlicesType, endpointsType, servicesType } from './apiserver-services.js';
import { ApiError, notFound } from './apiserver-status.js';
import { metaOf, ObjectStore } from './apiserver-store.js';
import { renderingOf, toTable } from './apiserver-table.js';
import { Watches } from './apiserver-watch.js';

export { applyMergePatch } from './apiserver-patch.js';
export { ApiError, status, type Status } from './apiserver-status.js';
export type { ResourceType } from './apiserver-resources.js';
export type { WatchEvent } from './apiserver-watch.js';
export { crdsType, endpointSlicesType, endpointsType, leasesType, namespacesType, nodesType, peersType };

/** Nodes and Peers: the types kg reads, with shorthand methods. */
export type Resource = 'nodes' | 'peers';

/**
 * What a request was, for `count()`: `list-R`/`watch-R` per resource (plural), `get-K` per kind
 * (singular), `patch-node`, `write` (any other create, replace, patch or delete), `discovery`
 * (discovery and OpenAPI), `other`, and `reset` (a connection reset while stopped in 'reset' mode).
 */
export type RequestKind =
  | 'list-nodes'
  | 'watch-nodes'
  | 'get-node'
  | 'patch-node'
  | 'list-peers'
  | 'watch-peers'
  | 'get-peer'
  | 'write'
  | 'discovery'
  | 'other'
  | 'reset'
  | `list-${string}`
  | `watch-${string}`
  | `get-${string}`;

/** A request as a route sees it: parsed, its body read. */
export interface ApiRequest {
  method: string;
  url: URL;
  /** The path without trailing slashes. */
  path: string;
  body: string;
  req: IncomingMessage;
  res: ServerResponse;
}

/** Handles a request it recognises (answering it, or throwing ApiError) and returns true; else false. */
export type Route = (request: ApiRequest, server: TestApiServer) => boolean;

export interface TestApiServerOptions {
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
  /** Objects to start with, by kind (a CustomResourceDefinition given replaces the built-in one). */
  objects?: readonly KubeObject[];
  /**
   * A restart: the `objects` keep their resourceVersion and uid, and the revision goes on from
   * here (apiserver-state.ts). Without it the objects are created anew.
   */
  revision?: number;
  /** More resource types to serve. */
  resources?: readonly ResourceType[];
  /** The service range Services' clusterIPs come from (kube-apiserver's --service-cluster-ip-range). Default 10.96.0.0/12. */
  serviceCidr?: string;
  /** More paths to serve, consulted in order before the built-in ones. */
  routes?: readonly Route[];
}

/** The CustomResourceDefinitions of manifests/ (the Peer's), served as a cluster with Kilo installed has them. */
function manifestCrds(): KubeObject[] {
  const file = join(repository, 'manifests', 'crds.yaml');
  return parseAllDocuments(readFileSync(file, 'utf8'))
    .map((d) => d.toJS() as KubeObject | null)
    .filter((d): d is KubeObject => d?.kind === 'CustomResourceDefinition');
}

/** A test kube-apiserver, as strict as the real one (see above). Create with `TestApiServer.start()`. */
export class TestApiServer {
  readonly types: readonly ResourceType[];
  private readonly store: ObjectStore;
  private readonly watches: Watches;
  private readonly sockets = new Set<Socket>();
  private readonly counts = new Map<RequestKind, number>();
  private readonly queries = new Map<RequestKind, URLSearchParams[]>();
  private readonly routes: readonly Route[];
  private http: Server | undefined;
  private unix: Server | undefined;
  private readonly host: string;
  private readonly socketPath: string | undefined;
  private resetter: NetServer | undefined;
  private failStatus: number | null = null;
  private boundPort = 0;
  /** How a watch from a compacted resourceVersion is refused; may be changed between requests. */
  goneAs: 'event' | 'status';

  private constructor(options: TestApiServerOptions) {
    this.types = [
      ...builtinResources,
      leasesType,
      servicesType(options.serviceCidr ?? defaultServiceCidr),
      endpointsType,
      endpointSlicesType,
      ...(options.resources ?? []),
    ];
    this.store = new ObjectStore(this.types, options.historyLimit ?? 1000);
    this.watches = new Watches(this.store, options.bookmarkIntervalMs ?? 1000);
    this.routes = options.routes ?? [];
    this.boundPort = options.port ?? 0;
    this.goneAs = options.goneAs ?? 'event';
    this.host = options.host ?? '127.0.0.1';
    this.socketPath = options.socketPath;
    const given = options.objects ?? [];
    const givenKey = (o: KubeObject) => `${o.kind}/${metaOf(o).namespace ?? ''}/${metaOf(o).name ?? ''}`;
    const keys = new Set(given.map(givenKey));
    const defaults = [
      ...builtinNamespaces.map((name) => ({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name },
        status: { phase: 'Active' },
      })),
      ...manifestCrds(),
    ].filter((o) => !keys.has(givenKey(o)));
    if (options.revision !== undefined) this.store.restore(given, options.revision);
    for (const o of options.revision !== undefined ? defaults : [...defaults, ...given])
      this.store.create(this.store.typeOfKind(o), o);
    const onChange = options.onChange;
    if (onChange) this.store.onRecord(() => onChange());
  }

  /** Starts a server and resolves once it listens. */
  static async start(options: TestApiServerOptions = {}): Promise<TestApiServer> {
    const server = new TestApiServer(options);
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

  /** Every stored object (each with kind and apiVersion), type by type: Nodes, Peers, then the others. */
  allObjects(): KubeObject[] {
    return this.types.flatMap((t) => this.objectsOf(t));
  }

  /** The same as a kubeconfig file's text, for processes started with --kubeconfig. */
  kubeconfigYaml(): string {
    return [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: lab',
      '  cluster:',
      `    server: ${this.url}`,
      '    insecure-skip-tls-verify: true',
      'users:',
      '- name: lab',
      '  user: {}',
      'contexts:',
      '- name: lab',
      '  context: {cluster: lab, user: lab}',
      'current-context: lab',
      '',
    ].join('\n');
  }

  // ---- objects (the test's hand: no validation, no preconditions) -----------------------

  /** The current resourceVersion (of the last change). */
  get resourceVersion(): string {
    return String(this.store.rv);
  }

  /** Creates a Node; throws if it exists. Returns the stored object (with resourceVersion). */
  addNode(obj: KubeObject): KubeObject {
    return this.store.create(nodesType, obj);
  }

  /** Replaces a Node entirely; throws if it does not exist. */
  updateNode(obj: KubeObject): KubeObject {
    return this.store.replace(nodesType, obj);
  }

  /** Merge-patches a Node (null deletes), as a PATCH request would. */
  patchNode(name: string, patch: unknown): KubeObject {
    return this.store.mergePatch(nodesType, name, patch);
  }

  /** Deletes a Node; throws if it does not exist. */
  deleteNode(name: string): void {
    this.store.remove(nodesType, undefined, name);
  }

  addPeer(obj: KubeObject): KubeObject {
    return this.store.create(peersType, obj);
  }

  updatePeer(obj: KubeObject): KubeObject {
    return this.store.replace(peersType, obj);
  }

  patchPeer(name: string, patch: unknown): KubeObject {
    return this.store.mergePatch(peersType, name, patch);
  }

  deletePeer(name: string): void {
    this.store.remove(peersType, undefined, name);
  }

  /** A copy of a stored Node, or undefined. */
  node(name: string): KubeObject | undefined {
    return this.get(nodesType, undefined, name);
  }

  peer(name: string): KubeObject | undefined {
    return this.get(peersType, undefined, name);
  }

  nodeNames(): string[] {
    return this.store.sorted(nodesType).map(([k]) => k);
  }

  peerNames(): string[] {
    return this.store.sorted(peersType).map(([k]) => k);
  }

  /** A copy of a stored object of any served type, or undefined. */
  get(type: ResourceType, namespace: string | undefined, name: string): KubeObject | undefined {
    const o = this.store.peek(type, namespace, name);
    return o && structuredClone(o);
  }

  /** Copies of the stored objects of a type, in key order (optionally one namespace's). */
  objectsOf(type: ResourceType, namespace?: string): KubeObject[] {
    return this.store.sorted(type, namespace).map(([, o]) => structuredClone(o));
  }

  /** Creates, replaces or deletes an object of any served type (the test's hand). */
  createObject(type: ResourceType, obj: KubeObject): KubeObject {
    return this.store.create(type, obj);
  }

  replaceObject(type: ResourceType, obj: KubeObject): KubeObject {
    return this.store.replace(type, obj);
  }

  deleteObject(type: ResourceType, namespace: string | undefined, name: string): void {
    this.store.remove(type, namespace, name);
  }

  // ---- faults --------------------------------------------------------------------------

  /**
   * Forgets the watch history: every resourceVersion before now is gone. Open watches receive
   * an ERROR event with code 410 and are closed (the real server does this when its watch cache
   * falls behind); a watch or resume from an older version gets 410 too, so does a `continue`.
   */
  compact(): void {
    this.store.compact();
    this.watches.expireAll();
  }

  /**
   * Makes every open watch go silent: the connection stays open, nothing more is sent (no
   * events, no bookmarks, no timeout). Watches opened later behave normally.
   */
  stallWatches(): void {
    this.watches.stallAll();
  }

  /** Cuts every open watch connection (TCP reset), as a load balancer or a crash would. */
  dropWatches(): void {
    this.watches.dropAll();
  }

  /** From now on every request is answered with this HTTP status (e.g. 503); null heals. */
  failRequests(code: number | null): void {
    this.failStatus = code;
  }

  /** Watches currently open (stalled ones included), of one resource (plural) or all. */
  openWatches(resource?: string): number {
    return this.watches.count(resource);
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

  private bump(kind: RequestKind): void {
    this.counts.set(kind, (this.counts.get(kind) ?? 0) + 1);
  }

  // ---- listening -----------------------------------------------------------------------

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
    this.watches.clear();
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    await Promise.all([
      http && new Promise<void>((resolve) => http.close(() => resolve())),
      resetter && new Promise<void>((resolve) => resetter.close(() => resolve())),
      unix && new Promise<void>((resolve) => unix.close(() => resolve())),
    ]);
  }

  // ---- routing -------------------------------------------------------------------------

  /** Answers a request with JSON (for routes). */
  reply(res: ServerResponse, code: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  }

  private kindOf(method: string, path: string, target: Target | undefined, watching: boolean): RequestKind {
    if (!target) return /^\/(api|apis|openapi|version)(\/|$)/.test(path) ? 'discovery' : 'other';
    const { type, name } = target;
    if (name === undefined && method === 'GET') return `${watching ? 'watch' : 'list'}-${type.name}`;
    if (name !== undefined && method === 'GET') return `get-${type.singular}`;
    if (type === nodesType && method === 'PATCH') return 'patch-node';
    if (name === undefined ? method === 'POST' : ['PUT', 'PATCH', 'DELETE'].includes(method)) return 'write';
    return 'other';
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://test-apiserver');
    const path = url.pathname.replace(/\/+$/, '') || '/';
    const method = req.method ?? 'GET';
    const target = parsePath(path, this.types);
    const watching = url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1';
    const kind = this.kindOf(method, path, target, watching);
    this.bump(kind);
    const seen = this.queries.get(kind) ?? [];
    seen.push(new URLSearchParams(url.searchParams));
    if (seen.length > 100) seen.shift();
    this.queries.set(kind, seen);

    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const request: ApiRequest = { method, url, path, body: Buffer.concat(chunks).toString('utf8'), req, res };
      try {
        if (this.failStatus !== null)
          throw new ApiError(
            this.failStatus,
            'InternalError',
            `test apiserver answers every request with ${this.failStatus}`,
          );
        for (const route of this.routes) if (route(request, this)) return;
        if (target) return this.serveResource(request, target, watching);
        const doc =
          method === 'GET' ? discovery(path, this.types, `${req.socket.localAddress}:${this.boundPort}`) : undefined;
        if (doc === undefined) throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
        this.reply(res, 200, doc);
      } catch (e) {
        const error =
          e instanceof ApiError ? e : new ApiError(500, 'InternalError', `test apiserver: ${(e as Error).message}`);
        if (!res.headersSent) this.reply(res, error.code, error.status);
        else res.end();
      }
    });
  }

  private serveResource(request: ApiRequest, target: Target, watching: boolean): void {
    const { type, name } = target;
    const { method, res } = request;
    const r: ResourceRequest = {
      type,
      namespace: type.namespaced ? target.namespace : undefined,
      req: request.req,
      body: request.body,
      query: request.url.searchParams,
    };
    if (r.namespace !== undefined && method !== 'GET' && !this.store.peek(namespacesType, undefined, r.namespace))
      throw notFound('namespaces', r.namespace);
    if (method === 'GET' && !watching) {
      // kubectl get asks for a Table (server-side printing): apiserver-table.ts.
      const rendering = renderingOf(request.req.headers.accept);
      const answer = name === undefined ? listRequest(this.store, r) : getRequest(this.store, r, name);
      return this.reply(
        res,
        200,
        rendering.as === 'table' ? toTable(this.store, type, answer, rendering, r.query) : answer,
      );
    }
    if (name === undefined && method === 'GET') return this.watches.open(type, r.namespace, r.query, res, this.goneAs);
    if (name === undefined && method === 'POST') return this.reply(res, 201, createRequest(this.store, r));
    if (name !== undefined && method === 'PUT') return this.reply(res, 200, replaceRequest(this.store, r, name));
    if (name !== undefined && method === 'PATCH') return this.reply(res, 200, patchRequest(this.store, r, name));
    if (name !== undefined && method === 'DELETE') return this.reply(res, 200, deleteRequest(this.store, r, name));
    throw new ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
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
