import type { KubeObject } from '../../../src/model/parse.js';
import { locationLabel, type NatKind } from './layout.js';

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

/**
 * The locations with a node behind NAT (one that has no public address in the lab), and which NAT:
 * a symmetric one when the node was built in one of `symmetric` (lab locations, 1-based).
 */
export function natLocations(
  nodes: readonly { name: string; publicIP: string | null; location?: number }[],
  locations: ReadonlyMap<string, string>,
  symmetric: ReadonlySet<number> = new Set(),
): Map<string, NatKind> {
  const out = new Map<string, NatKind>();
  for (const n of nodes) {
    if (n.publicIP || !locations.has(n.name)) continue;
    const l = locations.get(n.name)!;
    if (out.get(l) !== 'symmetric')
      out.set(l, n.location !== undefined && symmetric.has(n.location) ? 'symmetric' : 'nat');
  }
  return out;
}

const natText: Record<NatKind, string> = { nat: 'behind NAT', symmetric: 'behind a symmetric NAT' };

/** How a location reads in the lab's output: its name, and whether it is behind NAT (which). */
export const describeLocation = (location: string, nat: ReadonlyMap<string, NatKind>): string => {
  const kind = nat.get(location);
  return `${location || '(no location)'}${kind ? `, ${natText[kind]}` : ''}`;
};

/** `behind NAT: loc3; behind a symmetric NAT: loc1, loc2` (empty without NAT), for `kg lab status`. */
export function describeNat(nat: ReadonlyMap<string, NatKind>): string {
  const parts: string[] = [];
  for (const kind of ['nat', 'symmetric'] as const) {
    const at = [...nat].filter(([, k]) => k === kind).map(([l]) => l);
    if (at.length > 0) parts.push(`${natText[kind]}: ${at.sort().join(', ')}`);
  }
  return parts.join('; ');
}
