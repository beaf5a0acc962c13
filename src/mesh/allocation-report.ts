import type { ValidationError } from '../model/errors.js';
import type { ParsedCluster } from '../model/parse.js';
import type { KiloNode } from '../model/types.js';
import { allocateSlots, segmentKeyOf } from './allocation.js';
import { readyMesh } from './compute.js';
import type { MeshOptions } from './options.js';

/**
 * The forced WireGuard IPs of a cluster that cannot be honoured (outside --subnet, taken by another
 * segment, a second address for one location), as the agents report them among their conflicts:
 * for kgctl, which reports a cluster's problems once, before it plans for any node.
 */
export function allocationProblems(cluster: ParsedCluster, options: MeshOptions, now: number): ValidationError[] {
  const mode = options.wireGuardIPAllocation ?? 'kilo';
  if (!cluster.nodes.some((n) => n.forceWireGuardIP !== null)) return [];
  // The problems depend on which nodes make up each segment, not on the segments' order.
  const bySegment = new Map<string, KiloNode[]>();
  for (const n of readyMesh(cluster, options, now).nodes) {
    const key = segmentKeyOf(n, options.granularity);
    const members = bySegment.get(key);
    if (members) members.push(n);
    else bySegment.set(key, [n]);
  }
  const placed = [...bySegment].map(([key, members]) => ({ key, members }));
  // Too many segments for the subnet: the topology says so, for every node.
  if (BigInt(placed.length) >= options.subnet.size() - 1n) return [];
  const context = {
    mode,
    subnet: options.subnet,
    ...(options.subnets ? { subnets: options.subnets } : {}),
    granularity: options.granularity,
    nodes: cluster.nodes,
    now,
  };
  return allocateSlots(placed, context).problems;
}
