/**
 * The controller's writes and lists in one cluster, through @kubernetes/client-node's generic
 * object client (one code path for Peers, Services and EndpointSlices). I/O edge.
 */
import { KubernetesObjectApi, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { describeError, statusCodeOf } from '../backend/kubernetes/errors.js';
import type { KubeObject } from '../model/parse.js';
import type { Change } from './diff.js';

export interface Kind {
  apiVersion: string;
  kind: string;
}

export const peerKind: Kind = { apiVersion: 'kilo.squat.ai/v1alpha1', kind: 'Peer' };
export const serviceKind: Kind = { apiVersion: 'v1', kind: 'Service' };
export const sliceKind: Kind = { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice' };

/** Client model objects (Dates, classes) as the plain JSON the pure part reads. */
const plain = (o: unknown): KubeObject => JSON.parse(JSON.stringify(o)) as KubeObject;

export class ClusterApi {
  private readonly client: KubernetesObjectApi;

  constructor(
    readonly kubeConfig: KubeConfig,
    /** For messages: the cluster's name in the link. */
    readonly name: string,
  ) {
    this.client = KubernetesObjectApi.makeApiClient(kubeConfig);
  }

  /** Every object of a kind (all namespaces), optionally by label selector, each with kind and apiVersion. */
  async list(kind: Kind, labelSelector?: string): Promise<KubeObject[]> {
    try {
      const list = await this.client.list(
        kind.apiVersion,
        kind.kind,
        undefined,
        undefined,
        undefined,
        undefined,
        undefined,
        labelSelector,
      );
      return list.items.map((o) => ({ ...plain(o), ...kind }));
    } catch (e) {
      throw new Error(`cannot list ${kind.kind}s of cluster "${this.name}": ${describeError(e)}`);
    }
  }

  /**
   * Carries out one change. A create that finds the object there (a watch not yet caught up, or
   * someone else's) and a delete of one already gone are no error: the next pass reads again.
   */
  async apply(change: Change): Promise<void> {
    const o = change.object as KubernetesObject;
    try {
      if (change.op === 'create') await this.client.create(o);
      else if (change.op === 'replace') await this.client.replace(o);
      else await this.client.delete(o);
    } catch (e) {
      const code = statusCodeOf(e);
      if ((change.op === 'delete' && code === 404) || (change.op === 'create' && code === 409)) return;
      const ns = (o.metadata?.namespace ?? '') === '' ? '' : `${o.metadata!.namespace!}/`;
      throw new Error(
        `cannot ${change.op} ${o.kind ?? ''} ${ns}${o.metadata?.name ?? ''} in cluster "${this.name}": ${describeError(e)}`,
      );
    }
  }
}
