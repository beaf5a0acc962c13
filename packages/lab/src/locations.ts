import type { KubeObject } from '../../../src/model/parse.js';
import { locationLabel } from './layout.js';

/**
 * Locations as the cluster says they are now (`kubectl annotate node … kilo.squat.ai/location=…`
 * moves a node), not as the lab was built: what `kg lab show` and `kg lab status` print.
 */

/** Node name → its location: the kilo.squat.ai/location annotation, else the topology label, as Kilo reads it. */
export function clusterLocations(objects: readonly KubeObject[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const o of objects) {
    const name = o.metadata?.name;
    if (!name) continue;
    out.set(name, o.metadata?.annotations?.['kilo.squat.ai/location'] || o.metadata?.labels?.[locationLabel] || '');
  }
  return out;
}

/** The locations with a node behind NAT (one that has no public address in the lab). */
export function natLocations(
  nodes: readonly { name: string; publicIP: string | null }[],
  locations: ReadonlyMap<string, string>,
): Set<string> {
  return new Set(nodes.filter((n) => !n.publicIP && locations.has(n.name)).map((n) => locations.get(n.name)!));
}

/** How a location reads in the lab's output: its name, and whether it is behind NAT. */
export const describeLocation = (location: string, nat: ReadonlySet<string>): string =>
  `${location || '(no location)'}${nat.has(location) ? ', behind NAT' : ''}`;
