import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Option, type Command } from 'commander';
import { loadSnapshot } from '../backend/snapshot.js';
import { UsageError } from '../model/errors.js';
import { parseCluster, type KubeObject, type ParsedCluster } from '../model/parse.js';
import { snapshotNow } from '../model/ready.js';
import { readyMesh } from '../mesh/compute.js';
import type { MeshOptions } from '../mesh/options.js';
import { meshOptionsFrom, nowOption, resolveGranularity, type MeshFlagValues } from './flags.js';
import type { LiveFlags } from './live-cluster.js';
import { isNodeReady } from '../model/ready.js';
import { electedLeaders } from '../election/decide.js';
import { leaseName } from '../election/lease-name.js';
import type { LeaseRecord } from '../backend/leases.js';
import { defaultElectionTiming } from '../election/types.js';
import type { ElectedLeaders } from '../mesh/leaders.js';
import { announcedFlags, explicitFlags, withAnnounced } from './announced-flags.js';
import { allocationProblems } from '../mesh/allocation-report.js';
import { mixedAllocation } from '../mesh/allocation-mix.js';
import { logLevels } from '../agent/log-levels.js';

export interface LoadedCluster {
  /** The flags in effect: the user's, and for the rest what the agents announce. */
  flags: ClusterFlags;
  cluster: ParsedCluster;
  now: number;
  options: MeshOptions;
  /** With --leader-election=lease: each location's leader as its Lease says (else Kilo's rule). */
  leaders?: ElectedLeaders;
  /** The objects as read (kgctl status reads annotations the model does not keep). */
  objects: readonly KubeObject[];
}

export type ClusterFlags = MeshFlagValues &
  LiveFlags & {
    cluster?: string;
    leaderElection?: 'annotation' | 'lease';
    namespace?: string;
    /** kgctl plan: the firewall backend to render (an agent's announcement sets it unless given). */
    firewall?: 'auto' | 'iptables' | 'nftables';
    /** Set by addLiveFlags: the announceable flags the user gave, which the agents' announcements do not override. */
    explicitFlags?: ReadonlySet<string>;
  };

/** As Kilo's kgctl: $KUBECONFIG, else ~/.kube/config where it exists (else none: --cluster or --master). */
function defaultKubeconfig(): string | undefined {
  const env = process.env['KUBECONFIG'];
  if (env) return env;
  const home = process.env['HOME'];
  const file = home ? join(home, '.kube', 'config') : undefined;
  return file && existsSync(file) ? file : undefined;
}

/**
 * --kubeconfig and --master: read the cluster live instead of from a --cluster snapshot; --now;
 * Kilo's --backend (kubernetes, its only one); --log-level (runProgram reads it: at debug an internal
 * error prints its stack trace; connect logs at it).
 */
export function addLiveFlags(cmd: Command): Command {
  cmd.hook('preAction', (_self, action) => {
    action.setOptionValue('explicitFlags', explicitFlags(action));
  });
  return cmd
    .addOption(
      new Option('--kubeconfig <path>', 'read Nodes and Peers from this cluster (instead of --cluster)').default(
        defaultKubeconfig(),
        '$KUBECONFIG, else ~/.kube/config',
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
    )
    .addOption(
      new Option('--backend <backend>', "where Nodes and Peers live: kubernetes (Kilo's only backend)")
        .choices(['kubernetes'])
        .default('kubernetes'),
    )
    .addOption(new Option('--log-level <level>', 'how much to log').choices(logLevels).default('info'));
}

/**
 * Loads the cluster a kgctl command reads: a snapshot file (--cluster, judged at its newest
 * last-seen) or a live cluster (--kubeconfig/--master, judged now). Flags the user did not give are
 * taken from what the agents announce (kilo.squat.ai/mesh-flags): the viewer's own announcement,
 * else the most common. Rejected objects are reported on stderr, one line each, and left out; the
 * command goes on with the rest.
 */
export async function loadCluster(given: ClusterFlags, viewer?: string): Promise<LoadedCluster> {
  const live = !given.cluster && (given.kubeconfig !== undefined || given.master !== undefined);
  if (!given.cluster && !live)
    throw new UsageError('no cluster: pass --cluster FILE (a snapshot of Nodes and Peers) or --kubeconfig FILE');
  // The Kubernetes client takes seconds to import: only a live read pays for it.
  const objects = live
    ? await import('./live-cluster.js').then(({ readLiveCluster, liveKubeConfig }) =>
        readLiveCluster(liveKubeConfig(given)),
      )
    : loadSnapshot(given.cluster!);
  const warn = (line: string) => process.stderr.write(`warning: ${line}\n`);
  let cluster = parseCluster(objects, { topologyLabel: given.topologyLabel });
  const now = given.now ?? (live ? Math.floor(Date.now() / 1000) : snapshotNow(cluster.nodes));
  // One index loop, no lists between (docs/performance.md#cold-code).
  const readyNames = new Set<string>();
  for (let i = 0; i < cluster.nodes.length; i++)
    if (isNodeReady(cluster.nodes[i]!, now)) readyNames.add(cluster.nodes[i]!.name);
  const announced = announcedFlags(objects, readyNames, viewer, warn);
  const flags = announced ? withAnnounced(given, announced.flags, given.explicitFlags ?? new Set()) : given;
  // Readiness does not depend on the location, so the ready set above stands.
  if (flags.topologyLabel !== given.topologyLabel)
    cluster = parseCluster(objects, { topologyLabel: flags.topologyLabel });
  for (const e of cluster.errors) warn(`ignoring ${e.message}`);
  const granularity = resolveGranularity(flags.meshGranularity, cluster.nodes, viewer);
  const options = meshOptionsFrom(flags, granularity);
  for (const e of readyMesh(cluster, options, now).conflicts) warn(`conflict: ${e.message}`);
  for (const e of allocationProblems(cluster, options, now)) warn(`conflict: ${e.message}`);
  const mixed = mixedAllocation(objects, readyNames);
  if (mixed) warn(mixed.message);
  if (flags.leaderElection !== 'lease') return { flags, cluster, now, options, objects };
  if (!live) {
    if (given.explicitFlags?.has('leaderElection'))
      throw new UsageError('--leader-election=lease reads the Leases of a live cluster: pass --kubeconfig');
    // Announced by the agents, but a snapshot holds no Leases: say so rather than fail.
    warn(
      `the agents elect leaders by Lease (announced by ${announced?.by ?? 'the nodes'}); a snapshot holds no Leases, so leaders follow the annotation rule`,
    );
    return { flags: { ...flags, leaderElection: 'annotation' }, cluster, now, options, objects };
  }
  const leases = await import('./live-cluster.js').then(({ readLiveLeases, liveKubeConfig }) =>
    readLiveLeases(liveKubeConfig(flags), flags.namespace ?? 'kube-system'),
  );
  const ready = cluster.nodes.filter((n) => isNodeReady(n, now));
  const byLocation = new Map<string, LeaseRecord>();
  for (const n of ready) {
    const l = leases.find((x) => x.name === leaseName(n.location));
    if (l) byLocation.set(n.location, l);
  }
  return {
    flags,
    cluster,
    now,
    options,
    leaders: electedLeaders(ready, byLocation, Date.now(), defaultElectionTiming),
    objects,
  };
}
