import { groupDetail, quote } from './graph.js';
import { summaryRelayLines } from './graph-summary-relays.js';
import type { Segment, Topology } from './topology.js';

/**
 * Above this many ready nodes `kgctl graph` draws the summary: a cross mesh of N nodes has
 * N²/2 tunnels, which no layout engine draws readably (2,000 nodes: 2 million lines).
 */
export const summaryAboveNodes = 200;

interface Place {
  id: string;
  label: string;
  nodes: number;
  /** Segment count per group: segments of one group talk in the clear, of two over WireGuard. */
  groups: Map<string, number>;
}

/** One vertex per location (per group in subnet granularity), as the full graph's boxes. */
function placesOf(t: Topology): Place[] {
  const bySubnet = t.granularity === 'subnet';
  const places = new Map<string, Place>();
  for (const s of t.segments) {
    const key = bySubnet ? s.group : s.location;
    let p = places.get(key);
    if (!p) places.set(key, (p = { id: `place/${key}`, label: labelOf(s, bySubnet), nodes: 0, groups: new Map() }));
    p.nodes += s.nodes.length;
    p.groups.set(s.group, (p.groups.get(s.group) ?? 0) + 1);
  }
  return [...places.values()].sort((a, b) => (a.label < b.label ? -1 : a.label > b.label ? 1 : 0));
}

function labelOf(s: Segment, bySubnet: boolean): string {
  const location = s.location || '(no location)';
  if (!bySubnet) return location;
  return `${location} ${groupDetail(s)}`;
}

/** Pairs of segments between two places (or inside one): over WireGuard and in the clear. */
function pairs(a: Place, b: Place | null): { wireguard: number; plain: number } {
  let all = 0;
  let plain = 0;
  for (const [g, n] of a.groups) {
    if (b === null) {
      plain += (n * (n - 1)) / 2;
      continue;
    }
    const m = b.groups.get(g) ?? 0;
    plain += n * m;
  }
  const segments = (p: Place) => [...p.groups.values()].reduce((x, y) => x + y, 0);
  if (b === null) {
    const n = segments(a);
    all = (n * (n - 1)) / 2;
  } else all = segments(a) * segments(b);
  return { wireguard: all - plain, plain };
}

/**
 * The mesh in summary, linear in the nodes: locations as vertices labelled with their node and
 * segment counts, one line per pair of locations labelled with its tunnel count, and the Peers as
 * one vertex joined to every location by the tunnels its leaders hold to them.
 */
export function summaryDOT(t: Topology): string {
  const places = placesOf(t);
  const segments = (p: Place) => [...p.groups.values()].reduce((x, y) => x + y, 0);
  const nodes = places.reduce((n, p) => n + p.nodes, 0);
  const out: string[] = ['digraph kilo {'];
  const title = `Kilo mesh ${t.subnets.map((c) => c.networkText).join(', ')}, ${t.granularity} granularity: ${nodes} nodes in ${places.length} places, ${t.peers.length} Peers (summary; --full draws every node)`;
  out.push(`  label=${quote(title)};`, '  labelloc=t;', '  fontname="Helvetica";', '  overlap=false;');
  out.push('  node [shape=box, style="rounded,filled", fillcolor="#f4f7fb", fontname="Helvetica", fontsize=11];');
  out.push('  edge [dir=none, penwidth=1.2, fontname="Helvetica", fontsize=10];', '');
  for (const p of places) {
    const inside = pairs(p, null);
    const lines = [p.label, `${p.nodes} nodes, ${segments(p)} segments`];
    if (inside.wireguard > 0) lines.push(`${inside.wireguard} tunnels inside`);
    out.push(`  ${quote(p.id)} [label=${quote(lines.join('\n'))}];`);
  }
  if (t.peers.length > 0) out.push(`  "peers" [label=${quote(`${t.peers.length} Peers`)}, shape=ellipse];`);
  out.push('');
  places.forEach((a, i) => {
    for (const b of places.slice(i + 1)) {
      const { wireguard, plain } = pairs(a, b);
      if (wireguard > 0) out.push(`  ${quote(a.id)} -> ${quote(b.id)} [label="${wireguard}", color="#1f5fa8"];`);
      if (plain > 0) out.push(`  ${quote(a.id)} -> ${quote(b.id)} [label="${plain}", style=dotted, color="#808080"];`);
    }
    if (t.peers.length > 0)
      out.push(`  ${quote(a.id)} -> "peers" [label="${segments(a) * t.peers.length}", style=dashed, color="#b35900"];`);
  });
  const bySubnet = t.granularity === 'subnet';
  const placeOf = (s: Segment) => {
    const key = bySubnet ? s.group : s.location;
    return { id: `place/${key}`, label: labelOf(s, bySubnet) };
  };
  out.push(...summaryRelayLines(t, placeOf, quote));
  out.push('}');
  return `${out.join('\n')}\n`;
}
