import { Command, Option } from 'commander';
import { notReadyReason, topologyOf } from '../mesh/compute.js';
import { graphDOT, layouts, type Layout } from '../mesh/graph.js';
import { summaryAboveNodes, summaryDOT } from '../mesh/graph-summary.js';
import { UsageError } from '../model/errors.js';
import type { Topology } from '../mesh/topology.js';
import { isNodeReady } from '../model/ready.js';
import { addLiveFlags, loadCluster } from './cluster.js';
import { addMeshFlags, meshOptionsFrom, resolveGranularity, type MeshFlagValues } from './flags.js';

interface GraphFlags extends MeshFlagValues {
  cluster?: string;
  output: 'dot' | 'svg';
  layout: Layout;
  full: boolean;
}

export function graphCommand(): Command {
  const cmd = new Command('graph')
    .description('draw the mesh as Graphviz DOT or SVG: a box per location, a line per linked pair')
    .option('--cluster <file>', 'cluster snapshot (Kubernetes List or multi-document YAML)')
    .addOption(new Option('-o, --output <format>', 'dot or svg').choices(['dot', 'svg']).default('dot'))
    .addOption(
      new Option('--layout <engine>', 'Graphviz layout: dot and fdp keep the location boxes, neato and circo do not')
        .choices(layouts)
        .default('dot'),
    )
    .option(
      '--full',
      `draw every node and tunnel even above ${summaryAboveNodes} ready nodes (where a summary by location is drawn)`,
      false,
    );
  addLiveFlags(addMeshFlags(cmd, { allowAuto: true }));
  return cmd.action(async (flags: GraphFlags) => {
    const { cluster, now, leaders, flags: effective } = await loadCluster(flags);
    const where = flags.cluster ?? 'the cluster';
    // The topology is the same from every node (only `local` differs), so any ready node will
    // do; the first by name keeps the output stable.
    const ready = cluster.nodes
      .filter((n) => isNodeReady(n, now))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const viewer = ready[0];
    if (!viewer) {
      const first = cluster.nodes[0];
      if (!first) throw new UsageError(`nothing to draw: ${where} holds no valid Node`);
      throw new UsageError(
        `nothing to draw: none of the ${cluster.nodes.length} nodes in ${where} is ready (node ${JSON.stringify(first.name)}: ${notReadyReason(first, now)})`,
      );
    }
    // `auto` follows what the drawn-from node announces, as `kgctl plan NODE` would.
    const options = meshOptionsFrom(
      effective,
      resolveGranularity(effective.meshGranularity, cluster.nodes, viewer.name),
    );
    const topology = topologyOf(cluster, viewer.name, options, now, leaders);
    if (flags.full) refuseUndrawable(topology);
    const dot =
      flags.full || ready.length <= summaryAboveNodes
        ? graphDOT(topology, { layout: flags.layout })
        : summaryDOT(topology);
    if (flags.output === 'dot') {
      process.stdout.write(dot);
      return;
    }
    const { renderSVG } = await import('../graph/render.js');
    process.stdout.write(await renderSVG(dot, flags.layout));
  });
}

/**
 * The most lines --full draws: a million lines of DOT are ~100 MB that no layout engine finishes,
 * and a cross mesh of 20,000 nodes would be 200 million (kgctl ran out of memory after a minute).
 */
export const fullGraphLineLimit = 1_000_000;

/** --full on a mesh too big to draw: a usage error naming the count, before any line is made. */
function refuseUndrawable(t: Topology): void {
  const s = t.segments.length;
  let members = 0;
  for (const segment of t.segments) members += segment.nodes.length - 1;
  // As meshGraph links them: every pair of segments, each Peer to every segment, members to their leader.
  const lines = (s * (s - 1)) / 2 + t.peers.length * s + members;
  if (lines > fullGraphLineLimit)
    throw new UsageError(
      `--full: ${s} segments would be ${lines} lines (every pair of segments linked), more than the ${fullGraphLineLimit} any layout can draw; without --full kgctl graph draws the summary by location`,
    );
}
