import { Annotation } from '../model/annotations.js';
import { parseMeshFlags } from '../model/mesh-flags.js';
import type { KubeObject } from '../model/parse.js';

/**
 * How a ready node's agent allocates WireGuard IPs, as its announcement says: `stable` or `kilo`
 * (an announcement without the key: `kilo`, the default, or a kilo-ts from before the flag), or
 * `unannounced`: no kilo.squat.ai/mesh-flags at all, which is Kilo's own agent (or a broken one).
 */
export type AnnouncedAllocation = 'kilo' | 'stable' | 'unannounced';

/** The ready nodes by the allocation their agents announce, in the order of `objects`. */
export function announcedAllocations(
  objects: readonly KubeObject[],
  ready: ReadonlySet<string>,
): Map<AnnouncedAllocation, string[]> {
  const out = new Map<AnnouncedAllocation, string[]>();
  // Thousands of nodes announce a handful of texts: each is read once.
  const read = new Map<string, AnnouncedAllocation | null>();
  for (const o of objects) {
    const name = o.metadata?.name;
    if (o.kind !== 'Node' || typeof name !== 'string' || !ready.has(name)) continue;
    const text = o.metadata?.annotations?.[Annotation.meshFlags];
    let mode: AnnouncedAllocation | null | undefined = typeof text === 'string' ? read.get(text) : 'unannounced';
    if (mode === undefined) {
      const flags = parseMeshFlags(text!, `Node ${JSON.stringify(name)}`);
      // A broken announcement is reported where announcements are read; here it says nothing.
      mode = flags instanceof Error ? null : (flags.wireguardIpAllocation ?? 'kilo');
      read.set(text!, mode);
    }
    if (mode === null) continue;
    const names = out.get(mode);
    if (names) names.push(name);
    else out.set(mode, [name]);
  }
  return out;
}

const shownNames = 3;

/**
 * The warning for a cluster whose agents allocate WireGuard IPs by different rules: `stable` beside
 * `kilo` or beside Kilo's own agents, which give the same segment different addresses
 * (docs/migrating-from-kilo.md). Null when they agree, or when only `kilo` and Kilo's agents mix
 * (the same rule). `key` names the mix without its node names, for a log said once per mix.
 */
export function mixedAllocation(
  objects: readonly KubeObject[],
  ready: ReadonlySet<string>,
): { key: string; message: string } | null {
  const modes = announcedAllocations(objects, ready);
  if (!modes.has('stable') || modes.size < 2) return null;
  const order: AnnouncedAllocation[] = ['stable', 'kilo', 'unannounced'];
  const label = { stable: 'stable', kilo: 'kilo', unannounced: "no announcement (Kilo's agent)" } as const;
  const parts = order
    .filter((m) => modes.has(m))
    .map((m) => {
      // Sorted only here, for a warning: most clusters have none (20,000 names were a sort each time).
      const names = modes.get(m)!.sort();
      const shown = names.slice(0, shownNames).map((n) => JSON.stringify(n));
      const more = names.length > shownNames ? `, and ${names.length - shownNames} more` : '';
      return `${label[m]} on ${names.length} (${shown.join(', ')}${more})`;
    });
  return {
    key: order.filter((m) => modes.has(m)).join('+'),
    message: `the agents allocate WireGuard IPs by different rules: ${parts.join('; ')}; they may give a segment different addresses (see docs/migrating-from-kilo.md)`,
  };
}
