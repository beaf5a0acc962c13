import { Option, type Command } from 'commander';
import { loadSnapshot } from '../backend/snapshot.js';
import { UsageError } from '../model/errors.js';
import { parseCluster, type ParsedCluster } from '../model/parse.js';
import { snapshotNow } from '../model/ready.js';
import { readyMesh } from '../mesh/compute.js';
import type { MeshOptions } from '../mesh/options.js';
import { meshOptionsFrom, nowOption, resolveGranularity, type MeshFlagValues } from './flags.js';
import type { LiveFlags } from './live-cluster.js';
import { isNodeReady } from '../model/ready.js';
import { electedLeaders } from '../election/decide.js';
import { leaseName } from '../election/lease-name.js';
import { defaultElectionTiming, type ElectedLeaders, type LeaseRecord } from '../election/types.js';

export interface LoadedCluster {
  cluster: ParsedCluster;
  now: number;
  options: MeshOptions;
  /** With --leader-election=lease: each location's leader as its Lease says (else Kilo's rule). */
  leaders?: ElectedLeaders;
}

export type ClusterFlags = MeshFlagValues &
  LiveFlags & { cluster?: string; leaderElection?: 'annotation' | 'lease'; namespace?: string };

/** --kubeconfig and --master: read the cluster live instead of from a --cluster snapshot; --now. */
export function addLiveFlags(cmd: Command): Command {
  return cmd
    .addOption(
      new Option('--kubeconfig <path>', 'read Nodes and Peers from this cluster (instead of --cluster)').default(
        process.env['KUBECONFIG'] || undefined,
        '$KUBECONFIG',
      ),
    )
    .addOption(new Option('--master <url>', 'API server address (overrides the kubeconfig)'))
    .addOption(nowOption())
    .addOption(
      new Option('--leader-election <mode>', "who leads a location: annotation (Kilo's rule) or lease (live clusters)")
        .choices(['annotation', 'lease'])
        .default('annotation'),
    )
    .addOption(
      new Option('--namespace <name>', 'the namespace of the Leases (--leader-election=lease)').default('kube-system'),
    );
}

/**
 * Loads the cluster a kgctl command reads: a snapshot file (--cluster, judged at its newest
 * last-seen) or a live cluster (--kubeconfig/--master, judged now). Rejected objects are reported
 * on stderr, one line each, and left out; the command goes on with the rest.
 */
export async function loadCluster(flags: ClusterFlags, hostname?: string): Promise<LoadedCluster> {
  const live = !flags.cluster && (flags.kubeconfig !== undefined || flags.master !== undefined);
  if (!flags.cluster && !live)
    throw new UsageError('no cluster: pass --cluster FILE (a snapshot of Nodes and Peers) or --kubeconfig FILE');
  // The Kubernetes client takes seconds to import: only a live read pays for it.
  const objects = live
    ? await import('./live-cluster.js').then(({ readLiveCluster, liveKubeConfig }) =>
        readLiveCluster(liveKubeConfig(flags)),
      )
    : loadSnapshot(flags.cluster!);
  const cluster = parseCluster(objects, { topologyLabel: flags.topologyLabel });
  for (const e of cluster.errors) process.stderr.write(`warning: ignoring ${e.message}\n`);
  const now = flags.now ?? (live ? Math.floor(Date.now() / 1000) : snapshotNow(cluster.nodes));
  const granularity = resolveGranularity(flags.meshGranularity, cluster.nodes, hostname);
  const options = meshOptionsFrom(flags, granularity);
  for (const e of readyMesh(cluster, options, now).conflicts) process.stderr.write(`warning: conflict: ${e.message}\n`);
  if (flags.leaderElection !== 'lease') return { cluster, now, options };
  if (!live) throw new UsageError('--leader-election=lease reads the Leases of a live cluster: pass --kubeconfig');
  const leases = await import('./live-cluster.js').then(({ readLiveLeases, liveKubeConfig }) =>
    readLiveLeases(liveKubeConfig(flags), flags.namespace ?? 'kube-system'),
  );
  const ready = cluster.nodes.filter((n) => isNodeReady(n, now));
  const byLocation = new Map<string, LeaseRecord>();
  for (const n of ready) {
    const l = leases.find((x) => x.name === leaseName(n.location));
    if (l) byLocation.set(n.location, l);
  }
  return { cluster, now, options, leaders: electedLeaders(ready, byLocation, Date.now(), defaultElectionTiming) };
}
