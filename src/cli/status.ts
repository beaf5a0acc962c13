import { Command, Option } from 'commander';
import { notReadyReason, topologyOf } from '../mesh/compute.js';
import { Annotation } from '../model/annotations.js';
import { UsageError } from '../model/errors.js';
import { isNodeReady } from '../model/ready.js';
import { meshStatus, renderStatus } from '../agent/health-status.js';
import { parsePathHealth, type PathHealthSummary } from '../agent/health-summary.js';
import { addLiveFlags, loadCluster } from './cluster.js';
import { addMeshFlags, meshOptionsFrom, resolveGranularity, type MeshFlagValues } from './flags.js';

/**
 * `kgctl status`: per node ready, leader, endpoint in use, WireGuard handshakes and paths (as its
 * agent publishes them in kilo.squat.ai/path-health), and every pair planned but not working, with
 * a reason (docs/health.md).
 */
export function statusCommand(): Command {
  const cmd = new Command('status')
    .description(
      'per node: ready, leader, endpoint in use, handshakes, paths; and every planned pair that does not work, with why',
    )
    .option('--cluster <file>', 'cluster snapshot (Kubernetes List or multi-document YAML)')
    .addOption(new Option('-o, --output <format>', 'text or json').choices(['text', 'json']).default('text'))
    .addOption(
      new Option('--limit <n>', 'list at most this many broken pairs (all are counted)')
        .argParser((v) => {
          const n = Number(v);
          if (!Number.isInteger(n) || n < 0) throw new UsageError(`--limit: not a whole number: ${JSON.stringify(v)}`);
          return n;
        })
        .default(100),
    );
  addLiveFlags(addMeshFlags(cmd, { allowAuto: true }));
  return cmd.action(async (given: MeshFlagValues & { cluster?: string; output: 'text' | 'json'; limit: number }) => {
    const { cluster, now, leaders, flags, objects } = await loadCluster(given);
    const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
    const viewer = cluster.nodes.filter((n) => isNodeReady(n, now)).sort(byName)[0];
    if (cluster.nodes.length === 0)
      throw new UsageError(`nothing to show: ${given.cluster ?? 'the cluster'} holds no valid Node`);
    const options = meshOptionsFrom(flags, resolveGranularity(flags.meshGranularity, cluster.nodes, viewer?.name));
    // The topology is the same from every node but for `local`: any ready node will do.
    const topology = viewer ? topologyOf(cluster, viewer.name, options, now, leaders) : null;
    const health = new Map<string, PathHealthSummary | null>();
    for (const o of objects)
      if (o.kind === 'Node' && o.metadata?.name)
        health.set(o.metadata.name, parsePathHealth(o.metadata.annotations?.[Annotation.pathHealth]));
    const s = meshStatus(
      topology,
      cluster.nodes,
      (n) => (isNodeReady(n, now) ? null : notReadyReason(n, now)),
      (name) => health.get(name) ?? null,
      { mesh: options, limit: given.limit },
    );
    process.stdout.write(given.output === 'json' ? `${JSON.stringify(s, null, 2)}\n` : renderStatus(s));
  });
}
