import { effectiveEndpoint, type Topology } from '../mesh/topology.js';
import { formatEndpoint } from '../model/parse.js';
import type { Granularity, KiloNode } from '../model/types.js';
import { lanMistakes, type LanMesh } from './health-lan.js';
import type { PathHealthSummary } from './health-summary.js';

/**
 * The mesh as `kgctl status` shows it (pure): per node its readiness, whether it leads its
 * segment, the endpoint its peers dial and what its agent published of its paths; and every pair
 * that is planned but not working, with a reason: computed from published data where it can be
 * (health-lan.ts), else as the agents report it (kilo.squat.ai/path-health).
 */
export interface NodeStatus {
  name: string;
  location: string;
  ready: boolean;
  /** Why not ready (null when ready). */
  notReady: string | null;
  /** Leads its segment (in location granularity: its location). */
  leader: boolean;
  /** The endpoint its WireGuard peers dial (a discovered one behind NAT), null for none. */
  endpoint: string | null;
  /** As its agent last published them; null: it publishes none (another agent, or not yet). */
  handshakes: PathHealthSummary['handshakes'] | null;
  paths: PathHealthSummary['pairs'] | null;
}

export interface BrokenPair {
  from: string;
  to: string;
  path: 'private' | 'wireguard';
  reason: string;
  /** published: computed from the nodes' annotations; probe: reported by `from`'s agent. */
  source: 'published' | 'probe';
}

export interface MeshStatus {
  granularity: Granularity;
  nodes: NodeStatus[];
  /** At most `limit` of them. */
  broken: BrokenPair[];
  /** All the broken pairs known, listed or not. */
  brokenTotal: number;
}

/**
 * The broken pairs among the ready nodes: the location mistakes first, then what agents report
 * that those do not explain. `limit` bounds the list (not the count).
 */
export function brokenPairs(
  ready: readonly KiloNode[],
  mesh: LanMesh,
  healthOf: (node: string) => PathHealthSummary | null,
  limit = 100,
): { broken: BrokenPair[]; total: number } {
  const lan = lanMistakes(ready, mesh, { limit });
  const broken: BrokenPair[] = lan.mistakes.map((m) => ({
    from: m.node,
    to: m.mate,
    path: 'private',
    reason: m.reason,
    source: 'published',
  }));
  const explained = new Set(lan.mistakes.flatMap((m) => [`${m.node}\0${m.mate}`, `${m.mate}\0${m.node}`]));
  let total = lan.total;
  for (const n of [...ready].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const h = healthOf(n.name);
    if (!h) continue;
    total += h.more;
    for (const f of h.failing) {
      if (explained.has(`${n.name}\0${f.node}`)) continue;
      total++;
      if (broken.length < limit)
        broken.push({
          from: n.name,
          to: f.node,
          path: f.path,
          reason: `${n.name} reports: ${f.reason}`,
          source: 'probe',
        });
    }
  }
  return { broken, total };
}

export function meshStatus(
  t: Topology | null,
  nodes: readonly KiloNode[],
  isReady: (n: KiloNode) => string | null,
  healthOf: (node: string) => PathHealthSummary | null,
  o: { mesh: LanMesh; limit?: number },
): MeshStatus {
  const leaders = new Set(t?.segments.map((s) => s.leader.name) ?? []);
  const sorted = [...nodes].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const out: NodeStatus[] = sorted.map((n) => {
    const why = isReady(n);
    const e = t && n.key ? effectiveEndpoint(t, n.endpoint, n.key, n.persistentKeepalive) : n.endpoint;
    const h = healthOf(n.name);
    return {
      name: n.name,
      location: n.location,
      ready: why === null,
      notReady: why,
      leader: leaders.has(n.name),
      endpoint: e ? formatEndpoint(e) : null,
      handshakes: h?.handshakes ?? null,
      paths: h?.pairs ?? null,
    };
  });
  const ready = sorted.filter((n) => isReady(n) === null);
  const { broken, total } = brokenPairs(ready, o.mesh, healthOf, o.limit);
  return { granularity: o.mesh.granularity, nodes: out, broken, brokenTotal: total };
}

/** The broken pairs as lines an operator reads (kgctl status, the lab's finding). */
export function brokenLines(broken: readonly BrokenPair[], total: number): string[] {
  if (total === 0) return ['every planned pair works, as far as the agents have probed'];
  const lines = [`planned but not working: ${total} pair${total === 1 ? '' : 's'}`];
  // ↔: computed from published data, broken both ways; →: as `from`'s agent reports it.
  for (const b of broken)
    lines.push(`  ${b.from} ${b.source === 'published' ? '↔' : '→'} ${b.to} (${b.path}): ${b.reason}`);
  if (total > broken.length) lines.push(`  and ${total - broken.length} more`);
  return lines;
}

/** `kgctl status -o text`. */
export function renderStatus(s: MeshStatus): string {
  const header = ['NODE', 'LOCATION', 'READY', 'LEADER', 'ENDPOINT', 'HANDSHAKES', 'PATHS'];
  const rows = s.nodes.map((n) => [
    n.name,
    n.location || '-',
    n.ready ? 'yes' : 'no',
    n.leader ? 'yes' : 'no',
    n.endpoint ?? '-',
    n.handshakes ? `${n.handshakes.recent} recent, ${n.handshakes.stale} stale, ${n.handshakes.never} never` : '-',
    n.paths ? `${n.paths.ok} ok, ${n.paths.failing} failing, ${n.paths.unknown} unknown` : '-',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  const notReady = s.nodes.filter((n) => !n.ready).map((n) => `  ${n.name}: not ready: ${n.notReady}`);
  return (
    [
      `granularity ${s.granularity}; ${s.nodes.filter((n) => n.ready).length} of ${s.nodes.length} nodes ready`,
      line(header),
      ...rows.map(line),
      ...notReady,
      '',
      ...brokenLines(s.broken, s.brokenTotal),
    ].join('\n') + '\n'
  );
}
