import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { KubeObject } from '../../model/parse.js';
import { silentLogger, type ChangeListener, type Logger } from '../source.js';
import { Reflector, type ReflectorTimings, type WatchClient } from './reflector.js';
import { nodeLister, nodesPath, normalizeNode, notifyListeners } from './source.js';
import { LineWatch } from './watch.js';

export interface KubernetesNodesOptions {
  kubeConfig: KubeConfig;
  /** Reflector timings; tests shrink them. */
  timings?: Partial<ReflectorTimings>;
  logger?: Logger;
  /** Replaces the client's Watch (tests). */
  watch?: WatchClient;
}

/**
 * Nodes alone, read the way KubernetesSource reads them (the same list, watch, reflector and
 * normalisation, which keeps spec.podCIDR(s) and Kilo's annotations): for `kg webhook`, whose
 * RBAC grants list and watch of Nodes and nothing else, so it must not list Peers.
 */
export class KubernetesNodes {
  private readonly nodes: Reflector;
  private readonly listeners: ChangeListener[] = [];
  private readonly logger: Logger;

  constructor(options: KubernetesNodesOptions) {
    const kc = options.kubeConfig;
    this.logger = options.logger ?? silentLogger;
    this.nodes = new Reflector({
      resource: 'nodes',
      path: nodesPath,
      // No label is read: an empty list keeps none of kubelet's.
      normalize: normalizeNode([]),
      list: nodeLister(kc.makeApiClient(CoreV1Api)),
      watch: options.watch ?? new LineWatch(kc),
      timings: options.timings,
      logger: this.logger,
      onChange: (update) => notifyListeners(this.listeners, this.logger, update),
    });
  }

  /** Starts listing and watching in the background; never waits for the API server. */
  start(): void {
    this.nodes.start();
  }

  /** Resolves after the first complete list; rejects when stopped before. */
  waitForSync(): Promise<void> {
    return this.nodes.waitForSync();
  }

  stop(): Promise<void> {
    return this.nodes.stop();
  }

  /** The Nodes of the last list and the watch events since: kept while the API server is away. */
  objects(): KubeObject[] {
    return this.nodes.objects();
  }

  onChange(listener: ChangeListener): void {
    this.listeners.push(listener);
  }

  /** True once the Nodes have been listed at least once. */
  synced(): boolean {
    return this.nodes.synced();
  }
}
