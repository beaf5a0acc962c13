import type { Command } from 'commander';
import { Annotation } from '../model/annotations.js';
import { parseMeshFlags, type MeshFlags } from '../model/mesh-flags.js';
import type { KubeObject } from '../model/parse.js';
import { objectLabel } from '../model/schema.js';

/** The flags an announcement can set: the MeshFlags fields, named as commander names the options. */
const announceable: readonly (keyof MeshFlags)[] = [
  'subnet',
  'port',
  'encapsulate',
  'local',
  'cni',
  'iptablesForwardRules',
  'routeHostTraffic',
  'serviceCidr',
  'topologyLabel',
  'compatibility',
  'leaderElection',
  'namespace',
  'firewall',
  'wireguardIpAllocation',
];

/** The announceable flags the user gave (command line or environment): those win over announcements. */
export function explicitFlags(cmd: Command): Set<string> {
  const out = new Set<string>();
  for (const name of announceable) {
    const source = cmd.getOptionValueSource(name);
    if (source !== undefined && source !== 'default') out.add(name);
  }
  return out;
}

export interface Announced {
  flags: Partial<MeshFlags>;
  /** Who said so, for messages: `node "a"` or `3 of 4 ready nodes`. */
  by: string;
}

/**
 * The flags the agents announce: the viewer's own when it announces valid ones (that is what its
 * agent plans with), else the announcement most ready nodes share. Bad announcements are reported
 * through `warn` and ignored; the node stays in the mesh.
 */
export function announcedFlags(
  objects: readonly KubeObject[],
  ready: ReadonlySet<string>,
  viewer: string | undefined,
  warn: (line: string) => void,
): Announced | null {
  const counts = new Map<string, { flags: Partial<MeshFlags>; n: number }>();
  // Thousands of nodes announce a handful of texts: each good one is read once (a zod check each:
  // 0.2 s of CPU for 20,000 nodes). A bad one is read again for each node, whose name its warning says.
  const good = new Map<string, { flags: Partial<MeshFlags>; key: string }>();
  let own: Partial<MeshFlags> | null = null;
  for (const o of objects) {
    if (o.kind !== 'Node') continue;
    const name = o.metadata?.name;
    const text = o.metadata?.annotations?.[Annotation.meshFlags];
    if (typeof name !== 'string' || typeof text !== 'string' || (!ready.has(name) && name !== viewer)) continue;
    let read = good.get(text);
    if (read === undefined) {
      const parsed = parseMeshFlags(text, objectLabel('Node', o));
      if (parsed instanceof Error) {
        warn(`ignoring the announced flags of ${parsed.message}`);
        continue;
      }
      // --relay=false is a node's own choice, not a mesh flag: nodes differing only in it agree.
      read = { flags: parsed, key: text.replace(',"relay":false', '') };
      good.set(text, read);
    }
    if (name === viewer) own = read.flags;
    if (!ready.has(name)) continue;
    const seen = counts.get(read.key);
    if (seen) seen.n++;
    else counts.set(read.key, { flags: read.flags, n: 1 });
  }
  if (own) return { flags: own, by: `node ${JSON.stringify(viewer)}` };
  // Most common first; among equals the smallest text, so the answer does not depend on list order.
  const best = [...counts.entries()].sort(([ta, a], [tb, b]) => b.n - a.n || (ta < tb ? -1 : 1))[0];
  if (!best) return null;
  const total = [...counts.values()].reduce((s, c) => s + c.n, 0);
  if (counts.size > 1)
    warn(
      `the nodes announce ${counts.size} different sets of flags: using the one ${best[1].n} of ${total} announce (give the flags to choose)`,
    );
  return { flags: best[1].flags, by: `${best[1].n} of ${total} ready nodes` };
}

/** `flags` with every announceable flag the user did not give taken from the announcement. */
export function withAnnounced<T extends Partial<MeshFlags>>(
  flags: T,
  announced: Partial<MeshFlags>,
  explicit: ReadonlySet<string>,
): T {
  const out: Record<string, unknown> = { ...flags };
  for (const name of announceable)
    if (!explicit.has(name) && announced[name] !== undefined) out[name] = announced[name];
  return out as T;
}
