/**
 * Leases (coordination.k8s.io/v1) in the lab's API server, as kube-apiserver serves them to a
 * leader election: namespaced create (409 AlreadyExists), get, list, watch (resume from a
 * resourceVersion, 410 when it is older than the history), replace with optimistic concurrency
 * (a stale metadata.resourceVersion is 409 Conflict; none is an unconditional update, which
 * Leases allow) and delete. Validation is kube-apiserver's where a client could tell: DNS-1123
 * subdomain names, the namespace of the path, MicroTime with exactly six fractional digits,
 * positive leaseDurationSeconds, non-negative leaseTransitions.
 *
 * Kept apart from apiserver.ts, which hands over every request under the group's path and shares
 * its one resourceVersion counter (etcd's revision) with it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export const leaseGroupPath = '/apis/coordination.k8s.io/v1';

export interface LeaseObject {
  apiVersion: 'coordination.k8s.io/v1';
  kind: 'Lease';
  metadata: {
    name: string;
    namespace: string;
    resourceVersion: string;
    uid: string;
    creationTimestamp: string;
    [k: string]: unknown;
  };
  spec?: Record<string, unknown>;
}

type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

interface Watcher {
  namespace: string | null;
  res: ServerResponse;
}

export interface LeaseHost {
  /** Takes the next resourceVersion of the whole server. */
  nextResourceVersion(): number;
  currentResourceVersion(): number;
  /** Builds the Status body the server answers failures with. */
  fail(res: ServerResponse, code: number, reason: string, message: string): void;
  reply(res: ServerResponse, code: number, body: unknown): void;
}

const dns1123Subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** metav1.MicroTime as Go's RFC3339Micro parses it: six fractional digits, no fewer. */
const microTime = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|[+-]\d{2}:\d{2})$/;

export class LeaseStore {
  private readonly leases = new Map<string, LeaseObject>();
  private history: { rv: number; type: EventType; object: LeaseObject }[] = [];
  private floor = 0;
  private uid = 0;
  private readonly watchers = new Set<Watcher>();

  constructor(
    private readonly host: LeaseHost,
    private readonly historyLimit = 1000,
  ) {}

  /** A copy of a stored Lease, or undefined. */
  get(namespace: string, name: string): LeaseObject | undefined {
    const o = this.leases.get(`${namespace}/${name}`);
    return o && structuredClone(o);
  }

  /** Every Lease, oldest first. */
  all(): LeaseObject[] {
    return [...this.leases.values()].map((o) => structuredClone(o));
  }

  /** Answers a request under /apis/coordination.k8s.io/v1; false when the path is not a Lease path. */
  handle(req: IncomingMessage, res: ServerResponse, url: URL): boolean {
    const path = url.pathname.replace(/\/+$/, '');
    if (!path.startsWith(`${leaseGroupPath}/`)) return false;
    const rest = path
      .slice(leaseGroupPath.length + 1)
      .split('/')
      .map(decodeURIComponent);
    const method = req.method ?? 'GET';
    const watching = url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1';
    // /leases, /namespaces/NS/leases, /namespaces/NS/leases/NAME
    let namespace: string | null = null;
    let name: string | null = null;
    if (rest.length === 1 && rest[0] === 'leases') namespace = null;
    else if (rest.length >= 3 && rest.length <= 4 && rest[0] === 'namespaces' && rest[2] === 'leases') {
      namespace = rest[1]!;
      name = rest[3] ?? null;
    } else return false;

    if (name === null && method === 'GET') {
      if (watching) this.watch(namespace, url.searchParams, res);
      else this.list(namespace, res);
      req.resume();
      return true;
    }
    if (namespace === null) {
      req.resume();
      this.host.fail(res, 405, 'MethodNotAllowed', `${method} is not allowed on all namespaces' leases`);
      return true;
    }
    if (name !== null && method === 'GET') {
      req.resume();
      const o = this.leases.get(`${namespace}/${name}`);
      if (!o) this.host.fail(res, 404, 'NotFound', `leases.coordination.k8s.io "${name}" not found`);
      else this.host.reply(res, 200, o);
      return true;
    }
    if (name !== null && method === 'DELETE') {
      req.resume();
      this.delete(namespace, name, res);
      return true;
    }
    if ((name === null && method === 'POST') || (name !== null && method === 'PUT')) {
      const ns = namespace;
      readJson(req, (err, body) => {
        if (err) return this.host.fail(res, 400, 'BadRequest', err);
        if (method === 'POST') this.create(ns, body!, res);
        else this.update(ns, name!, body!, res);
      });
      return true;
    }
    req.resume();
    this.host.fail(res, 405, 'MethodNotAllowed', `${method} is not supported on leases by the lab's API server`);
    return true;
  }

  private invalid(namespace: string, body: Record<string, unknown>, name: string): string | null {
    const meta = (body['metadata'] ?? {}) as Record<string, unknown>;
    if (!name) return 'metadata.name: Required value: name or generateName is required';
    if (name.length > 253 || !dns1123Subdomain.test(name))
      return `metadata.name: Invalid value: ${JSON.stringify(name.slice(0, 100))}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'`;
    if (meta['namespace'] !== undefined && meta['namespace'] !== namespace)
      return `metadata.namespace: Invalid value: ${JSON.stringify(meta['namespace'])}: does not match the namespace of the request (${namespace})`;
    const spec = body['spec'];
    if (spec === undefined) return null;
    if (typeof spec !== 'object' || spec === null || Array.isArray(spec))
      return 'spec: Invalid value: must be an object';
    const s = spec as Record<string, unknown>;
    for (const f of ['renewTime', 'acquireTime'] as const) {
      const v = s[f];
      if (v !== undefined && v !== null && (typeof v !== 'string' || !microTime.test(v)))
        return `spec.${f}: Invalid value: ${JSON.stringify(JSON.stringify(v).slice(0, 100))}: not a MicroTime (RFC 3339 with microseconds)`;
    }
    const d = s['leaseDurationSeconds'];
    if (d !== undefined && d !== null && (!Number.isInteger(d) || (d as number) <= 0))
      return `spec.leaseDurationSeconds: Invalid value: ${JSON.stringify(d)}: must be greater than 0`;
    const t = s['leaseTransitions'];
    if (t !== undefined && t !== null && (!Number.isInteger(t) || (t as number) < 0))
      return `spec.leaseTransitions: Invalid value: ${JSON.stringify(t)}: must be greater than or equal to 0`;
    const h = s['holderIdentity'];
    if (h !== undefined && h !== null && typeof h !== 'string')
      return `spec.holderIdentity: Invalid value: ${JSON.stringify(h)}: must be a string`;
    return null;
  }

  private create(namespace: string, body: Record<string, unknown>, res: ServerResponse): void {
    const meta = (body['metadata'] ?? {}) as Record<string, unknown>;
    const name = typeof meta['name'] === 'string' ? meta['name'] : '';
    const problem = this.invalid(namespace, body, name);
    if (problem)
      return this.host.fail(res, 422, 'Invalid', `Lease.coordination.k8s.io "${name}" is invalid: ${problem}`);
    const key = `${namespace}/${name}`;
    if (this.leases.has(key))
      return this.host.fail(res, 409, 'AlreadyExists', `leases.coordination.k8s.io "${name}" already exists`);
    const stored = this.store(namespace, name, body, `lease-uid-${++this.uid}`, new Date().toISOString());
    this.host.reply(res, 201, stored);
    this.record('ADDED', stored);
  }

  private update(namespace: string, name: string, body: Record<string, unknown>, res: ServerResponse): void {
    const meta = (body['metadata'] ?? {}) as Record<string, unknown>;
    if (meta['name'] !== undefined && meta['name'] !== name)
      return this.host.fail(
        res,
        400,
        'BadRequest',
        `the name of the object (${JSON.stringify(meta['name'])}) does not match the name on the URL (${name})`,
      );
    const problem = this.invalid(namespace, body, name);
    if (problem)
      return this.host.fail(res, 422, 'Invalid', `Lease.coordination.k8s.io "${name}" is invalid: ${problem}`);
    const old = this.leases.get(`${namespace}/${name}`);
    if (!old) return this.host.fail(res, 404, 'NotFound', `leases.coordination.k8s.io "${name}" not found`);
    const rv = meta['resourceVersion'];
    if (rv !== undefined && rv !== '' && rv !== old.metadata.resourceVersion)
      return this.host.fail(
        res,
        409,
        'Conflict',
        `Operation cannot be fulfilled on leases.coordination.k8s.io "${name}": the object has been modified; please apply your changes to the latest version and try again`,
      );
    const stored = this.store(namespace, name, body, old.metadata.uid, old.metadata.creationTimestamp);
    this.host.reply(res, 200, stored);
    this.record('MODIFIED', stored);
  }

  private delete(namespace: string, name: string, res: ServerResponse): void {
    const old = this.leases.get(`${namespace}/${name}`);
    if (!old) return this.host.fail(res, 404, 'NotFound', `leases.coordination.k8s.io "${name}" not found`);
    this.leases.delete(`${namespace}/${name}`);
    const gone = structuredClone(old);
    gone.metadata.resourceVersion = String(this.host.nextResourceVersion());
    this.host.reply(res, 200, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 200 });
    this.record('DELETED', gone);
  }

  private store(
    namespace: string,
    name: string,
    body: Record<string, unknown>,
    uid: string,
    creationTimestamp: string,
  ): LeaseObject {
    const meta = (body['metadata'] ?? {}) as Record<string, unknown>;
    const stored: LeaseObject = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        ...structuredClone(meta),
        name,
        namespace,
        uid,
        creationTimestamp,
        resourceVersion: String(this.host.nextResourceVersion()),
      },
    };
    if (body['spec'] !== undefined) stored.spec = structuredClone(body['spec'] as Record<string, unknown>);
    this.leases.set(`${namespace}/${name}`, stored);
    return structuredClone(stored);
  }

  private record(type: EventType, object: LeaseObject): void {
    const rv = Number(object.metadata.resourceVersion);
    this.history.push({ rv, type, object });
    while (this.history.length > this.historyLimit) this.floor = this.history.shift()!.rv;
    for (const w of this.watchers) {
      if (w.namespace === null || w.namespace === object.metadata.namespace) send(w.res, { type, object });
    }
  }

  private list(namespace: string | null, res: ServerResponse): void {
    const items = [...this.leases.values()]
      .filter((o) => namespace === null || o.metadata.namespace === namespace)
      // List items of built-in types carry no kind or apiVersion.
      .map(({ apiVersion: _a, kind: _k, ...rest }) => rest);
    this.host.reply(res, 200, {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'LeaseList',
      metadata: { resourceVersion: String(this.host.currentResourceVersion()) },
      items,
    });
  }

  private watch(namespace: string | null, query: URLSearchParams, res: ServerResponse): void {
    const from = query.get('resourceVersion');
    const resume = from !== null && from !== '' && from !== '0';
    const fromRV = resume ? Number(from) : 0;
    if (resume && !Number.isSafeInteger(fromRV))
      return this.host.fail(res, 400, 'BadRequest', `resourceVersion ${JSON.stringify(from)} is not a number`);
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    res.flushHeaders();
    if (resume && fromRV < this.floor) {
      send(res, {
        type: 'ERROR',
        object: {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message: `too old resource version: ${fromRV} (${this.floor})`,
          reason: 'Expired',
          code: 410,
        },
      });
      res.end();
      return;
    }
    const mine = (o: LeaseObject) => namespace === null || o.metadata.namespace === namespace;
    if (resume) {
      for (const e of this.history) if (e.rv > fromRV && mine(e.object)) send(res, { type: e.type, object: e.object });
    } else {
      for (const o of this.leases.values()) if (mine(o)) send(res, { type: 'ADDED', object: o });
    }
    const w: Watcher = { namespace, res };
    this.watchers.add(w);
    const timeoutSeconds = Number(query.get('timeoutSeconds') ?? '0');
    const timer =
      timeoutSeconds > 0
        ? setTimeout(() => {
            // Out of the set first: a change in the same tick must not write to an ended stream.
            this.watchers.delete(w);
            res.end();
          }, timeoutSeconds * 1000)
        : null;
    res.on('close', () => {
      this.watchers.delete(w);
      if (timer) clearTimeout(timer);
    });
  }
}

function send(res: ServerResponse, event: unknown): void {
  if (!res.writableEnded) res.write(`${JSON.stringify(event)}\n`);
}

function readJson(
  req: IncomingMessage,
  done: (err: string | null, body: Record<string, unknown> | null) => void,
): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch (e) {
      return done(`body is not JSON: ${(e as Error).message}`, null);
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      return done('body must be a JSON object', null);
    done(null, body as Record<string, unknown>);
  });
}
