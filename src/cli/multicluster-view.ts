import { Command } from 'commander';
import type { Cidr } from '../net/cidr.js';
import { parseCluster, type KubeObject } from '../model/parse.js';
import { isNodeReady } from '../model/ready.js';
import type { ClusterView } from '../multicluster/view.js';
import { announcedFlags, withAnnounced } from './announced-flags.js';
import { addMeshFlags, meshOptionsFrom, resolveGranularity, type MeshFlagValues } from './flags.js';

/** kg's defaults for every mesh flag, as commander gives them to a command run without any. */
function defaultFlags(): MeshFlagValues {
  return addMeshFlags(new Command(), { allowAuto: true }).parse([], { from: 'user' }).opts<MeshFlagValues>();
}

/**
 * A cluster as `kg multicluster` reads it: its mesh options are those its agents announce (as
 * kgctl takes them), else kg's defaults; its service range is the operator's flag, else what the
 * agents announce (--service-cidr), else none. Rejected objects and disagreeing announcements
 * are reported through `warn`.
 */
export function clusterView(
  name: string,
  objects: readonly KubeObject[],
  now: number,
  serviceCidrs: readonly Cidr[] | undefined,
  warn: (line: string) => void,
): ClusterView {
  let cluster = parseCluster(objects);
  const ready = new Set(cluster.nodes.filter((n) => isNodeReady(n, now)).map((n) => n.name));
  const announced = announcedFlags(objects, ready, undefined, warn);
  const base = defaultFlags();
  const flags = announced ? withAnnounced(base, announced.flags, new Set()) : base;
  if (flags.topologyLabel !== base.topologyLabel)
    cluster = parseCluster(objects, { topologyLabel: flags.topologyLabel });
  for (const e of cluster.errors) warn(`cluster "${name}": ignoring ${e.message}`);
  const options = meshOptionsFrom(flags, resolveGranularity(flags.meshGranularity, cluster.nodes));
  return { name, cluster, options, now, serviceCidrs: serviceCidrs ?? flags.serviceCidr };
}
