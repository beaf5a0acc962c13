import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import type { KubeObject } from '../../model/parse.js';
import {
  NodeType,
  PeerType,
  silentLogger,
  type ChangeListener,
  type ClusterSource,
  type Logger,
  type ObjectUpdate,
} from '../source.js';
import { kiloAnnotationPrefix } from '../../model/annotations.js';
import { withSignal } from './abort.js';
import { describeError } from './errors.js';
import {
  Reflector,
  type Lister,
  type ListResult,
  type ReflectorStats,
  type ReflectorTimings,
  type WatchClient,
} from './reflector.js';
import { LineWatch } from './watch.js';

export const peerGroup = 'kilo.squat.ai';
export const peerVersion = 'v1alpha1';
export const peerPlural = 'peers';
export const nodesPath = '/api/v1/nodes';
export const peersPath = `/apis/${peerGroup}/${peerVersion}/${peerPlural}`;

export interface KubernetesSourceOptions {
  kubeConfig: KubeConfig;
  /** Reflector timings (resync, watch timeout, watchdog, backoff); tests shrink them. */
  timings?: Partial<ReflectorTimings>;
  /** Patches taking longer than this are aborted. */
  requestTimeoutMs?: number;
  logger?: Logger;
  now?: () => number;
  random?: () => number;
  /** Replaces the client's Watch (tests). */
  watch?: WatchClient;
  /** The only Node labels kept in memory (the agent's --topology-label); all when absent. */
  nodeLabels?: readonly string[];
}

/**
 * Nodes and Peers from the Kubernetes API: one reflector each over @kubernetes/client-node's
 * list calls and a watch of our own (LineWatch), and merge patches of a node's annotations (the only write kg makes).
 */
export class KubernetesSource implements ClusterSource {
  private readonly core: CoreV1Api;
  private readonly nodes: Reflector;
  private readonly peers: Reflector;
  private readonly listeners: ChangeListener[] = [];
  private readonly requestTimeoutMs: number;
  private readonly logger: Logger;

  constructor(options: KubernetesSourceOptions) {
    const kc = options.kubeConfig;
    this.core = kc.makeApiClient(CoreV1Api);
    const custom = kc.makeApiClient(CustomObjectsApi);
    const watch = options.watch ?? new LineWatch(kc);
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.logger = options.logger ?? silentLogger;
    const common = {
      watch,
      timings: options.timings,
      logger: this.logger,
      now: options.now,
      random: options.random,
      onChange: (update?: ObjectUpdate) => this.emit(update),
    };
    this.nodes = new Reflector({
      ...common,
      resource: 'nodes',
      path: nodesPath,
      normalize: normalizeNode(options.nodeLabels),
      list: nodeLister(this.core),
    });
    this.peers = new Reflector({
      ...common,
      resource: 'peers',
      path: peersPath,
      normalize: normalizeAs(PeerType),
      list: async (signal, resourceVersion): Promise<ListResult> => {
        const list = (await custom.listClusterCustomObject(
          { group: peerGroup, version: peerVersion, plural: peerPlural, resourceVersion },
          withSignal(signal),
        )) as { metadata?: { resourceVersion?: string }; items?: KubeObject[] };
        return { resourceVersion: list.metadata?.resourceVersion ?? '', items: list.items ?? [] };
      },
    });
  }

  async start(): Promise<void> {
    this.nodes.start();
    this.peers.start();
    await Promise.all([this.nodes.waitForSync(), this.peers.waitForSync()]);
  }

  async stop(): Promise<void> {
    await Promise.all([this.nodes.stop(), this.peers.stop()]);
  }

  objects(): KubeObject[] {
    return [...this.nodes.objects(), ...this.peers.objects()];
  }

  onChange(listener: ChangeListener): void {
    this.listeners.push(listener);
  }

  synced(): boolean {
    return this.nodes.synced() && this.peers.synced();
  }

  /** The older of the two resources' last syncs: the source is as fresh as its stalest part. */
  lastSync(): number {
    return Math.min(this.nodes.lastSync(), this.peers.lastSync());
  }

  async patchNodeAnnotations(name: string, annotations: Record<string, string | null>): Promise<void> {
    const options = setHeaderOptions(
      'Content-Type',
      PatchStrategy.MergePatch,
      withSignal(AbortSignal.timeout(this.requestTimeoutMs)),
    );
    try {
      await this.core.patchNode({ name, body: { metadata: { annotations } } }, options);
    } catch (e) {
      throw new Error(`patching annotations of Node ${JSON.stringify(name)} failed: ${describeError(e)}`, { cause: e });
    }
  }

  /** Relists both resources now (tests, or an operator's signal). */
  resync(): void {
    this.nodes.requestResync();
    this.peers.requestResync();
  }

  stats(): { nodes: ReflectorStats; peers: ReflectorStats } {
    return { nodes: { ...this.nodes.stats }, peers: { ...this.peers.stats } };
  }

  private emit(update?: ObjectUpdate): void {
    notifyListeners(this.listeners, this.logger, update);
  }
}

/** Tells each listener of a change; one that throws is logged and does not keep the others from it. */
export function notifyListeners(listeners: readonly ChangeListener[], logger: Logger, update?: ObjectUpdate): void {
  for (const listener of listeners) {
    try {
      listener(update);
    } catch (e) {
      logger.error({ err: describeError(e) }, 'a change listener threw');
    }
  }
}

/** Lists every Node: the one Node list both KubernetesSource and KubernetesNodes make. */
export function nodeLister(core: CoreV1Api): Lister {
  return async (signal, resourceVersion): Promise<ListResult> => {
    const list = await core.listNode({ resourceVersion }, withSignal(signal));
    return { resourceVersion: list.metadata?.resourceVersion ?? '', items: list.items as KubeObject[] };
  };
}

/**
 * Keeps only what Kilo reads — kind, name, resourceVersion, labels, annotations, spec — as plain
 * JSON. Node status (images, conditions) is most of a Node's size and nobody reads it; list
 * items arrive as client model classes (Dates) and watch objects as JSON, and both must compare
 * equal. List items also carry no kind, which parseCluster needs.
 */
function normalizeAs(type: { apiVersion: string; kind: string }): (raw: unknown) => KubeObject | null {
  return (raw) => {
    if (typeof raw !== 'object' || raw === null) return null;
    const o = raw as KubeObject;
    const m = o.metadata;
    if (!m?.name) return null;
    const out: KubeObject = {
      apiVersion: type.apiVersion,
      kind: type.kind,
      metadata: { name: m.name },
    };
    if (m.resourceVersion !== undefined) out.metadata!.resourceVersion = m.resourceVersion;
    if (m.labels) out.metadata!.labels = { ...m.labels };
    if (m.annotations) out.metadata!.annotations = { ...m.annotations };
    if (o.spec !== undefined && o.spec !== null)
      out.spec = JSON.parse(JSON.stringify(o.spec)) as Record<string, unknown>;
    return out;
  };
}

/**
 * A Node as the agent keeps it for as long as it runs, one per node of the cluster: Kilo's
 * annotations, the wanted labels and spec.podCIDR(s) — what parseCluster reads. Kubelet's labels
 * and annotations, taints, providerID and the rest would be most of it.
 */
export function normalizeNode(
  labels: readonly string[] | undefined,
): (raw: unknown, previous?: KubeObject) => KubeObject | null {
  // Built straight from the raw object, not from normalizeAs's whole copy; what did not change is
  // taken from the previous object (labels, spec, annotation values): docs/performance.md#the-heap.
  return (raw, previous) => {
    if (typeof raw !== 'object' || raw === null) return null;
    const o = raw as KubeObject;
    const m = o.metadata;
    if (!m?.name) return null;
    const before = previous?.metadata;
    const metadata: NonNullable<KubeObject['metadata']> = { name: before?.name === m.name ? before.name : m.name };
    if (m.resourceVersion !== undefined) metadata.resourceVersion = m.resourceVersion;
    if (m.labels) {
      const picked = labels ? pick(m.labels, (k) => labels.includes(k)) : { ...m.labels };
      metadata.labels = shared(picked, before?.labels);
    }
    if (m.annotations)
      metadata.annotations = shared(
        pick(m.annotations, (k) => k.startsWith(kiloAnnotationPrefix)),
        before?.annotations,
      );
    const out: KubeObject = { apiVersion: NodeType.apiVersion, kind: NodeType.kind, metadata };
    if (o.spec !== undefined && o.spec !== null) {
      const podCIDR = o.spec['podCIDR'];
      const podCIDRs = o.spec['podCIDRs'];
      const last = previous?.spec;
      if (last && sameSpec(last, podCIDR, podCIDRs)) out.spec = last;
      else {
        const spec: Record<string, unknown> = {};
        if (podCIDR !== undefined) spec['podCIDR'] = typeof podCIDR === 'object' ? structuredClone(podCIDR) : podCIDR;
        if (podCIDRs !== undefined)
          spec['podCIDRs'] = typeof podCIDRs === 'object' ? structuredClone(podCIDRs) : podCIDRs;
        out.spec = spec;
      }
    }
    return out;
  };
}

/** Whether the kept `last` spec holds exactly this string podCIDR and these string podCIDRs. */
function sameSpec(last: Record<string, unknown>, podCIDR: unknown, podCIDRs: unknown): boolean {
  if (typeof podCIDR !== 'string' || last['podCIDR'] !== podCIDR) return false;
  const keys = Object.keys(last).length;
  if (podCIDRs === undefined) return keys === 1;
  const before = last['podCIDRs'];
  if (keys !== 2 || !Array.isArray(podCIDRs) || !Array.isArray(before) || before.length !== podCIDRs.length)
    return false;
  for (let i = 0; i < podCIDRs.length; i++)
    if (typeof podCIDRs[i] !== 'string' || podCIDRs[i] !== before[i]) return false;
  return true;
}

/**
 * `map`, or `previous` when it holds the same entries; otherwise `map` with each value equal to
 * `previous`'s taken from there (cached objects are never changed in place, so sharing is safe).
 */
function shared(
  map: Record<string, string>,
  previous: Record<string, string> | null | undefined,
): Record<string, string> {
  if (!previous) return map;
  let same = Object.keys(previous).length === Object.keys(map).length;
  for (const k of Object.keys(map)) {
    const old = previous[k];
    if (old !== undefined && old === map[k] && Object.prototype.hasOwnProperty.call(previous, k)) map[k] = old;
    else same = false;
  }
  return same ? previous : map;
}

function pick(map: Record<string, string>, keep: (key: string) => boolean): Record<string, string> {
  const out: Record<string, string> = {};
  // Keys, not entries: no pair array per key, for every annotation of every heartbeat.
  for (const k of Object.keys(map)) if (keep(k)) out[k] = map[k]!;
  return out;
}
