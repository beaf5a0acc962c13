import type { ParsedCluster } from '../model/parse.js';
import { isNodeReady, isPeerReady } from '../model/ready.js';
import type { KiloNode } from '../model/types.js';
import { subnetsOf, type MeshOptions } from './options.js';
import { planNode } from './plan.js';
import { buildTopology, TopologyError, type Topology } from './topology.js';
import type { Plan } from './types.js';
import type { ElectedLeaders } from './leaders.js';
import { resolveConflicts, type Resolved } from './conflicts.js';

/** Why a node is not ready, for an error a user can act on. */
export function notReadyReason(node: KiloNode, now: number): string | null {
  if (!node.endpoint) return 'it has no endpoint';
  if (!node.key) return 'it has no WireGuard key';
  if (node.podCIDRs.length === 0) return 'it has no pod CIDR (spec.podCIDR)';
  if (node.lastSeen === null) return 'it has never checked in (no last-seen)';
  if (!isNodeReady(node, now)) return `its last-seen ${node.lastSeen} is more than 60 s older than now (${now})`;
  return null;
}

/** Levenshtein distance: the fewest insertions, deletions and substitutions from a to b. */
function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++)
      next.push(Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1)));
    row = next;
  }
  return row[b.length]!;
}

/** The names closest to a mistyped one (up to three, in name order), for "did you mean". */
function nearest(word: string, names: readonly string[]): string[] {
  const scored = names.map((name) => ({ name, d: editDistance(word, name) }));
  const best = Math.min(...scored.map((s) => s.d));
  return scored
    .filter((s) => s.d === best)
    .map((s) => s.name)
    .sort()
    .slice(0, 3);
}

/** The topology of the ready part of a cluster, as `hostname` sees it. */
export function topologyOf(
  cluster: ParsedCluster,
  hostname: string,
  options: MeshOptions,
  now: number,
  leaders?: ElectedLeaders,
): Topology {
  const self = cluster.nodes.find((n) => n.name === hostname);
  if (!self) {
    const rejected = cluster.errors.find((e) => e.object === `Node ${JSON.stringify(hostname)}`);
    throw new TopologyError(
      rejected
        ? `node ${JSON.stringify(hostname)} was rejected: ${rejected.message}`
        : cluster.nodes.length === 0
          ? `node ${JSON.stringify(hostname)} not found: the cluster holds no valid Node`
          : `node ${JSON.stringify(hostname)} not found among the ${cluster.nodes.length} valid Nodes; nearest: ${nearest(
              hostname,
              cluster.nodes.map((n) => n.name),
            )
              .map((n) => JSON.stringify(n))
              .join(', ')}`,
    );
  }
  const reason = notReadyReason(self, now);
  if (reason) throw new TopologyError(`node ${JSON.stringify(hostname)} is not ready: ${reason}`);
  const { nodes, peers, conflicts } = readyMesh(cluster, options, now);
  if (!nodes.some((n) => n.name === hostname)) {
    const lost = conflicts.find((e) => e.object === `Node ${JSON.stringify(hostname)}`);
    throw new TopologyError(`node ${JSON.stringify(hostname)} was dropped: ${lost?.message ?? 'a conflict'}`);
  }
  const allocation = {
    mode: options.wireGuardIPAllocation ?? 'kilo',
    subnet: options.subnet,
    ...(options.subnets ? { subnets: options.subnets } : {}),
    granularity: options.granularity,
    nodes: cluster.nodes,
    now,
  };
  const t = buildTopology(nodes, peers, options.granularity, hostname, subnetsOf(options), leaders, allocation);
  // Forced WireGuard IPs that could not be honoured are reported with the other conflicts.
  return { ...t, conflicts: t.conflicts ? [...conflicts, ...t.conflicts] : conflicts };
}

/**
 * The ready nodes and Peers with their conflicts resolved (conflicts.ts): what every agent builds
 * its topology from. Callers that report problems (kgctl, the agent) print `conflicts` once.
 */
export function readyMesh(
  cluster: ParsedCluster,
  options: Pick<MeshOptions, 'subnet' | 'subnets'>,
  now: number,
): Resolved {
  // kgctl reports the conflicts, then plans from the same cluster: resolve once. Keyed by the
  // cluster object, so each new one starts afresh.
  const subnets = subnetsOf(options);
  const subnet = subnets.length === 1 ? options.subnet.networkText : subnets.map((c) => c.networkText).join(',');
  const last = lastResolved.get(cluster);
  if (last?.now === now && last.subnet === subnet) return last.resolved;
  const resolved = resolveConflicts(
    cluster.nodes.filter((n) => isNodeReady(n, now)),
    cluster.peers.filter(isPeerReady),
    subnets,
  );
  lastResolved.set(cluster, { now, subnet, resolved });
  return resolved;
}

const lastResolved = new WeakMap<ParsedCluster, { now: number; subnet: string; resolved: Resolved }>();

export function planOf(
  cluster: ParsedCluster,
  hostname: string,
  options: MeshOptions,
  now: number,
  leaders?: ElectedLeaders,
): Plan {
  return planNode(topologyOf(cluster, hostname, options, now, leaders), options);
}
