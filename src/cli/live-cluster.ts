import { CoordinationV1Api, CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { fromLease } from '../backend/kubernetes/leases.js';
import type { LeaseRecord } from '../backend/leases.js';
import { withSignal } from '../backend/kubernetes/abort.js';
import { describeError, statusCodeOf } from '../backend/kubernetes/errors.js';
import { kubeConfigFrom, type KubeConfigFlags } from '../backend/kubernetes/config.js';
import { peerGroup, peerPlural, peerVersion } from '../backend/kubernetes/source.js';
import { NodeType, PeerType } from '../backend/source.js';
import { UsageError } from '../model/errors.js';
import type { KubeObject } from '../model/parse.js';

/** The flags that point kgctl at a live cluster instead of a snapshot file. */
export interface LiveFlags extends KubeConfigFlags {
  kubeconfig?: string;
  master?: string;
}

export function liveKubeConfig(f: LiveFlags): KubeConfig {
  return kubeConfigFrom({
    ...(f.kubeconfig ? { kubeconfig: f.kubeconfig } : {}),
    ...(f.master ? { master: f.master } : {}),
  });
}

/**
 * Nodes and Peers read once with two plain lists: kgctl prints one answer and exits, so it wants
 * a fast, clear failure rather than the agent's retrying watch. A cluster without the Peer CRD
 * has no Peers.
 */
export async function readLiveCluster(kc: KubeConfig): Promise<KubeObject[]> {
  const server = kc.getCurrentCluster()?.server ?? '(no server)';
  const timeout = { signal: AbortSignal.timeout(30_000) };
  let nodes: KubeObject[];
  try {
    const list = await kc.makeApiClient(CoreV1Api).listNode({}, withSignal(timeout.signal));
    nodes = (list.items as unknown as KubeObject[]).map((n) => ({ ...plain(n), ...NodeType }));
  } catch (e) {
    throw new UsageError(`cannot list Nodes from ${server}: ${describeError(e)}`);
  }
  let peers: KubeObject[] = [];
  try {
    const list = (await kc
      .makeApiClient(CustomObjectsApi)
      .listClusterCustomObject(
        { group: peerGroup, version: peerVersion, plural: peerPlural },
        withSignal(timeout.signal),
      )) as { items?: KubeObject[] };
    peers = (list.items ?? []).map((p) => ({ ...p, ...PeerType }));
  } catch (e) {
    if (statusCodeOf(e) !== 404) throw new UsageError(`cannot list Peers from ${server}: ${describeError(e)}`);
  }
  return [...nodes, ...peers];
}

/** Client model objects (Dates, classes) as the plain JSON the parser reads. */
function plain(o: unknown): KubeObject {
  return JSON.parse(JSON.stringify(o)) as KubeObject;
}

/** The location Leases of a namespace, read once. */
export async function readLiveLeases(kc: KubeConfig, namespace: string): Promise<LeaseRecord[]> {
  const server = kc.getCurrentCluster()?.server ?? '(no server)';
  try {
    const list = await kc
      .makeApiClient(CoordinationV1Api)
      .listNamespacedLease({ namespace }, withSignal(AbortSignal.timeout(30_000)));
    return list.items.map(fromLease);
  } catch (e) {
    throw new UsageError(`cannot list Leases in ${namespace} from ${server}: ${describeError(e)}`);
  }
}
