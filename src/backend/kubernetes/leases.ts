import { CoordinationV1Api, V1MicroTime, Watch, type KubeConfig, type V1Lease } from '@kubernetes/client-node';
import { withSignal } from './abort.js';
import { describeError, statusCodeOf } from './errors.js';
import { Reflector, type ReflectorTimings } from './reflector.js';
import { silentLogger, type Logger } from '../source.js';
import type { KubeObject } from '../../model/parse.js';
import { LeaseConflict, type LeaseApi, type LeaseRecord } from '../leases.js';

export interface KubernetesLeasesOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  requestTimeoutMs?: number;
  timings?: Partial<ReflectorTimings>;
  logger?: Logger;
}

/** The Leases of one namespace over @kubernetes/client-node: a reflector for reads, optimistic writes. */
export class KubernetesLeases implements LeaseApi {
  private readonly api: CoordinationV1Api;
  private readonly reflector: Reflector;
  private readonly namespace: string;
  private readonly timeoutMs: number;
  /** This client's last write per Lease, until the watch brings that version or a later one. */
  private readonly own = new Map<string, LeaseRecord>();
  private onChange: () => void = () => {};

  constructor(o: KubernetesLeasesOptions) {
    this.api = o.kubeConfig.makeApiClient(CoordinationV1Api);
    this.namespace = o.namespace;
    this.timeoutMs = o.requestTimeoutMs ?? 5_000;
    this.reflector = new Reflector({
      resource: 'leases',
      path: `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(o.namespace)}/leases`,
      watch: new Watch(o.kubeConfig),
      logger: o.logger ?? silentLogger,
      // Leases of other controllers share the namespace: keep only ours, whole.
      normalize: (raw) => {
        const l = raw as V1Lease;
        if (!l?.metadata?.name?.startsWith('kilo-leader-')) return null;
        return JSON.parse(JSON.stringify({ ...l, kind: 'Lease', apiVersion: 'coordination.k8s.io/v1' })) as KubeObject;
      },
      list: async (signal, resourceVersion) => {
        const list = await this.api.listNamespacedLease(
          { namespace: this.namespace, resourceVersion },
          withSignal(signal),
        );
        return { resourceVersion: list.metadata?.resourceVersion ?? '', items: list.items as unknown as KubeObject[] };
      },
      onChange: () => {
        for (const name of [...this.own.keys()]) {
          const seen = this.fromCache(name);
          // Versions are opaque: any change the watch reports after our write supersedes it.
          if (seen && seen.resourceVersion !== this.ownSeenAt.get(name)) this.own.delete(name);
        }
        this.onChange();
      },
      ...(o.timings ? { timings: o.timings } : {}),
    });
  }

  /** The watch's version of each Lease when this client last wrote it. */
  private readonly ownSeenAt = new Map<string, string | undefined>();

  async start(onChange: () => void): Promise<void> {
    this.onChange = onChange;
    this.reflector.start();
    await this.reflector.waitForSync();
  }

  stop(): Promise<void> {
    return this.reflector.stop();
  }

  cached(name: string): LeaseRecord | null {
    return this.own.get(name) ?? this.fromCache(name);
  }

  private fromCache(name: string): LeaseRecord | null {
    const o = this.reflector.objects().find((x) => x.metadata?.name === name);
    return o ? fromLease(o as unknown as V1Lease) : null;
  }

  async get(name: string): Promise<LeaseRecord | null> {
    try {
      return this.remember(
        name,
        fromLease(await this.api.readNamespacedLease({ name, namespace: this.namespace }, this.signal())),
      );
    } catch (e) {
      if (statusCodeOf(e) === 404) return null;
      throw new Error(`reading Lease ${this.namespace}/${name} failed: ${describeError(e)}`, { cause: e });
    }
  }

  async create(lease: LeaseRecord): Promise<LeaseRecord> {
    return this.remember(
      lease.name,
      await this.write('creating', lease.name, () =>
        this.api.createNamespacedLease(
          { namespace: this.namespace, body: toLease(lease, this.namespace) },
          this.signal(),
        ),
      ),
    );
  }

  async update(lease: LeaseRecord): Promise<LeaseRecord> {
    return this.remember(
      lease.name,
      await this.write('updating', lease.name, () =>
        this.api.replaceNamespacedLease(
          { name: lease.name, namespace: this.namespace, body: toLease(lease, this.namespace) },
          this.signal(),
        ),
      ),
    );
  }

  private remember(name: string, stored: LeaseRecord): LeaseRecord {
    this.own.set(name, stored);
    this.ownSeenAt.set(name, this.fromCache(name)?.resourceVersion);
    return stored;
  }

  private async write(what: string, name: string, f: () => Promise<V1Lease>): Promise<LeaseRecord> {
    try {
      return fromLease(await f());
    } catch (e) {
      if (statusCodeOf(e) === 409)
        throw new LeaseConflict(`${what} Lease ${this.namespace}/${name}: ${describeError(e)}`);
      throw new Error(`${what} Lease ${this.namespace}/${name} failed: ${describeError(e)}`, { cause: e });
    }
  }

  private signal() {
    return withSignal(AbortSignal.timeout(this.timeoutMs));
  }
}

function time(v: unknown): number | null {
  if (v instanceof Date) return v.getTime();
  if (typeof v === 'string') {
    const t = Date.parse(v);
    return Number.isNaN(t) ? null : t;
  }
  return null;
}

export function fromLease(l: V1Lease): LeaseRecord {
  const s = l.spec ?? {};
  return {
    name: l.metadata?.name ?? '',
    holder: s.holderIdentity || null,
    renewTime: time(s.renewTime),
    acquireTime: time(s.acquireTime),
    durationSeconds: s.leaseDurationSeconds ?? 0,
    transitions: s.leaseTransitions ?? 0,
    resourceVersion: l.metadata?.resourceVersion ?? '',
  };
}

function toLease(r: LeaseRecord, namespace: string): V1Lease {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {
      name: r.name,
      namespace,
      ...(r.resourceVersion ? { resourceVersion: r.resourceVersion } : {}),
      labels: { 'app.kubernetes.io/managed-by': 'kilo-ts' },
    },
    spec: {
      ...(r.holder ? { holderIdentity: r.holder } : {}),
      leaseDurationSeconds: r.durationSeconds,
      leaseTransitions: r.transitions,
      ...(r.renewTime !== null ? { renewTime: new V1MicroTime(r.renewTime) } : {}),
      ...(r.acquireTime !== null ? { acquireTime: new V1MicroTime(r.acquireTime) } : {}),
    },
  };
}
