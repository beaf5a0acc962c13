import { loadSnapshot } from '../backend/snapshot.js';
import { UsageError } from '../model/errors.js';
import { parseCluster, type ParsedCluster } from '../model/parse.js';
import { snapshotNow } from '../model/ready.js';
import type { MeshOptions } from '../mesh/options.js';
import { meshOptionsFrom, resolveGranularity, type MeshFlagValues } from './flags.js';

export interface LoadedCluster {
  cluster: ParsedCluster;
  now: number;
  options: MeshOptions;
}

/**
 * Loads the cluster a kgctl command reads. Rejected objects are reported on stderr, one line
 * each, and left out; the command goes on with the rest.
 */
export function loadCluster(flags: MeshFlagValues & { cluster?: string }, hostname?: string): LoadedCluster {
  if (!flags.cluster) throw new UsageError('no cluster: pass --cluster FILE (a snapshot of Nodes and Peers)');
  const cluster = parseCluster(loadSnapshot(flags.cluster), { topologyLabel: flags.topologyLabel });
  for (const e of cluster.errors) process.stderr.write(`warning: ignoring ${e.message}\n`);
  const now = flags.now ?? snapshotNow(cluster.nodes);
  const granularity = resolveGranularity(flags.meshGranularity, cluster.nodes, hostname);
  return { cluster, now, options: meshOptionsFrom(flags, granularity) };
}
