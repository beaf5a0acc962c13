import type { Cidr } from '../net/cidr.js';
import type { ParsedCluster } from '../model/parse.js';
import type { MeshOptions } from '../mesh/options.js';

/**
 * One cluster of a link as the controller reads it: its Nodes and Peers parsed, the mesh options
 * its agents run with (what they announce, or the operator's flags), the time readiness is judged
 * at, and its service range (Kubernetes does not publish it: the operator's flag, else announced).
 */
export interface ClusterView {
  /** The cluster's name in the link: the value of the owner label on what is mirrored from it. */
  name: string;
  cluster: ParsedCluster;
  options: MeshOptions;
  /** Seconds since the epoch. */
  now: number;
  serviceCidrs: readonly Cidr[];
}

/** On every object the controller writes: the name of the cluster it mirrors. Its own, and only its own, to change. */
export const sourceLabel = 'kilo.squat.ai/multicluster-source';

/** An operator's label on a Service: mirror it into the other cluster. */
export const exportLabel = 'kilo.squat.ai/multicluster-export';

/** What a mirrored EndpointSlice says of who manages it (kube's endpointslice.kubernetes.io/managed-by). */
export const managedBy = 'multicluster.kilo.squat.ai';
