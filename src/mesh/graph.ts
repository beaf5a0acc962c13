import { formatEndpoint } from '../model/parse.js';
import type { KiloNode, KiloPeer } from '../model/types.js';
import { effectiveEndpoint, type Segment, type Topology } from './topology.js';
import { relayedLinkStyles } from './graph-relays.js';

/** The Graphviz layout engines kgctl offers: dot and fdp keep clusters, neato and circo ignore them. */
export const layouts = ['dot', 'fdp', 'neato', 'circo'] as const;
export type Layout = (typeof layouts)[number];

export interface GraphOptions {
  /**
   * The engine the DOT will be laid out with. The nodes and links are the same for every
   * engine; tuning attributes differ, and neato and circo get no location boxes.
   */
  layout: Layout;
}

/** How two vertices of the graph are joined. */
export type LinkKind =
  /** Routed in the clear over the private network (same group). */
  | 'plain'
  /** A WireGuard tunnel between two nodes. */
  | 'wireguard'
  /** A WireGuard tunnel between a node and a Peer. */
  | 'peer';

/**
 * One undirected link between two vertices (DOT ids, see nodeId/peerId). `tail` is the vertex
 * whose cluster comes first (then by name), so layouts that rank by edge direction place the
 * clusters in their listed order.
 */
export interface GraphLink {
  tail: string;
  head: string;
  kind: LinkKind;
  /** How many clusters apart the ends are (0 = same cluster); Peers count as the last cluster. */
  span: number;
  /** The index of the tail's cluster. */
  tailCluster: number;
}

/** A drawn box of nodes: a location, or in subnet granularity one group of a location. */
export interface GraphCluster {
  id: string;
  label: string;
  /** A second, smaller line under the label: the group's private network in subnet granularity. */
  detail?: string;
  nodes: KiloNode[];
}

/** The graph before it is written as DOT, for callers (and tests) that need the structure. */
export interface MeshGraph {
  clusters: GraphCluster[];
  peers: KiloPeer[];
  links: GraphLink[];
}

export const nodeId = (name: string): string => `node/${name}`;
export const peerId = (name: string): string => `peer/${name}`;

const byString = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Names in natural order: runs of digits compare as numbers (office-2 before office-10). */
function byNatural(a: string, b: string): number {
  const x = a.match(/\d+|\D+/g) ?? [];
  const y = b.match(/\d+|\D+/g) ?? [];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const [p, q] = [x[i]!, y[i]!];
    const numeric = /^\d/.test(p) && /^\d/.test(q);
    const d = numeric
      ? p.replace(/^0+/, '').length - q.replace(/^0+/, '').length ||
        byString(p.replace(/^0+/, ''), q.replace(/^0+/, ''))
      : byString(p, q);
    if (d !== 0) return d;
  }
  return x.length - y.length || byString(a, b);
}

/** The private network that names a group in subnet granularity, beside its location. */
export function groupDetail(segment: Segment): string {
  // The first family's, as the topology groups (IPv4's when there are two).
  const internal = segment.leader.internalIPs[0];
  return internal ? internal.networkText : '(no internal IP)';
}

/**
 * Behind NAT, from published data only: the mesh saw the node's WireGuard at an address other
 * than the endpoint it announces (a discovered endpoint, kilo.squat.ai/discovered-endpoints).
 */
export function behindNAT(t: Topology, n: KiloNode): boolean {
  const seen = n.key ? t.discoveredEndpoints.get(n.key) : undefined;
  return seen !== undefined && (n.endpoint === null || formatEndpoint(seen) !== formatEndpoint(n.endpoint));
}

/**
 * Clusters: one per location, or in subnet granularity one per group (the unit that talks in
 * the clear there). Ordered by label then id so the output is stable.
 */
function clustersOf(t: Topology): GraphCluster[] {
  const clusters = new Map<string, GraphCluster>();
  const bySubnet = t.granularity === 'subnet';
  for (const s of t.segments) {
    const key = bySubnet ? s.group : s.location;
    let c = clusters.get(key);
    if (!c) {
      const id = bySubnet ? `cluster_group_${key}` : `cluster_location_${key}`;
      const label = s.location || '(no location)';
      clusters.set(key, (c = { id, label, ...(bySubnet ? { detail: groupDetail(s) } : {}), nodes: [] }));
    }
    c.nodes.push(...s.nodes);
  }
  for (const c of clusters.values()) if (c.nodes.some((n) => behindNAT(t, n))) c.label += ' (behind NAT)';
  const out = [...clusters.values()];
  for (const c of out) c.nodes.sort((x, y) => byNatural(x.name, y.name));
  return out.sort(
    (x, y) => byString(x.label, y.label) || byString(x.detail ?? '', y.detail ?? '') || byString(x.id, y.id),
  );
}

/**
 * The links of the mesh, read off the topology: every pair of segments is joined once between
 * their leaders (in the clear inside a group, over WireGuard across groups); members of a
 * multi-node segment hang off their leader in the clear; every Peer is joined to every leader,
 * since leaders are the nodes that have Peers as WireGuard peers. Leaders of two segments are
 * two different nodes, so each unordered pair of vertices gets at most one link.
 */
function linksOf(t: Topology, clusters: GraphCluster[]): GraphLink[] {
  const place = new Map<string, { cluster: number; name: string }>();
  clusters.forEach((c, i) => {
    for (const n of c.nodes) place.set(nodeId(n.name), { cluster: i, name: n.name });
  });
  for (const p of t.peers) place.set(peerId(p.name), { cluster: clusters.length, name: p.name });
  const before = (x: string, y: string) => {
    const px = place.get(x)!;
    const py = place.get(y)!;
    return px.cluster - py.cluster || byString(px.name, py.name) || byString(x, y);
  };

  const links: GraphLink[] = [];
  const link = (x: string, y: string, kind: LinkKind) => {
    const [tail, head] = before(x, y) <= 0 ? [x, y] : [y, x];
    const tailCluster = place.get(tail)!.cluster;
    links.push({ tail, head, kind, span: place.get(head)!.cluster - tailCluster, tailCluster });
  };
  for (const s of t.segments) {
    for (const n of s.nodes) if (n !== s.leader) link(nodeId(s.leader.name), nodeId(n.name), 'plain');
  }
  t.segments.forEach((s, i) => {
    for (const o of t.segments.slice(i + 1)) {
      link(nodeId(s.leader.name), nodeId(o.leader.name), s.group === o.group ? 'plain' : 'wireguard');
    }
  });
  for (const p of t.peers) for (const s of t.segments) link(nodeId(s.leader.name), peerId(p.name), 'peer');
  return links.sort((x, y) => before(x.tail, y.tail) || before(x.head, y.head));
}

export function meshGraph(t: Topology): MeshGraph {
  const clusters = clustersOf(t);
  return { clusters, peers: t.peers, links: linksOf(t, clusters) };
}

/** A DOT double-quoted ID. Backslashes are doubled so a name never becomes a label escape. */
export function quote(s: string): string {
  return `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\r?\n/g, '\\n')}"`;
}

/** Text inside an HTML-like label. */
function html(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** A node box: the name in bold, then one small line per fact. */
function htmlLabel(title: string, lines: string[], note?: string): string {
  const rows = [`<B>${html(title)}</B>`];
  if (note) rows.push(`<I>${html(note)}</I>`);
  const facts = lines.map(html).join('<BR/>');
  if (facts) rows.push(`<FONT POINT-SIZE="9">${facts}</FONT>`);
  return `<${rows.join('<BR/>')}>`;
}

/** What a node box says. Only a leader has a WireGuard IP and an endpoint that others dial. */
function nodeLines(t: Topology, s: Segment, n: KiloNode): string[] {
  const lines: string[] = [];
  if (n === s.leader) for (const ip of s.wireGuardIPs) lines.push(`wg ${ip.text}`);
  for (const c of n.podCIDRs) lines.push(`pod ${c.networkText}`);
  for (const c of n.internalIPs) lines.push(`internal ${c.toString()}`);
  if (n === s.leader && n.key) {
    const e = effectiveEndpoint(t, n.endpoint, n.key, n.persistentKeepalive);
    if (e) lines.push(`endpoint ${formatEndpoint(e)}`);
  }
  return lines;
}

function peerLines(t: Topology, p: KiloPeer): string[] {
  const lines = p.allowedIPs.map((c) => `allowed ${c.networkText}`);
  const e = effectiveEndpoint(t, p.endpoint, p.publicKey, p.persistentKeepalive);
  if (e) lines.push(`endpoint ${formatEndpoint(e)}`);
  return lines;
}

/** Light fills that tell locations apart where no box is drawn around them. */
const palette = ['#dce9f7', '#e3f2d9', '#f9e3d3', '#ece0f5', '#fbf3c9', '#d9f2f0', '#f5dce4', '#e6e6e6'];

const linkStyle: Record<LinkKind, string> = {
  // Solid and wide: links inside a location are a few points long between stacked nodes, where dots
  // read as nothing; grey tells them from WireGuard's blue.
  plain: 'style=solid, color="#a0a0a0", penwidth=2.5',
  wireguard: 'style=solid, color="#1f5fa8"',
  peer: 'style=dashed, color="#b35900"',
};

/**
 * Engine-specific graph attributes. For dot: clusters become columns (rank=same, set per
 * cluster) laid left to right in cluster order; see linkTuning for the edges.
 */
function graphTuning(layout: Layout): string[] {
  switch (layout) {
    case 'dot':
      return ['rankdir=LR', 'newrank=true', 'nodesep=0.3', 'ranksep=1.8'];
    case 'fdp':
      return ['K=1.2', 'sep="+12"', 'splines=true'];
    case 'neato':
    case 'circo':
      return ['sep="+12"', 'splines=true'];
  }
}

/**
 * dot ranks by edge direction. Links inside a cluster must not rank (the cluster is one
 * column); links across clusters put later clusters further right; links that skip a column
 * are weighted so they run straight through the gap instead of looping around the column in
 * between (with three locations this yields a triangle). Only the first cluster's links to
 * Peers rank them, which puts the Peers in the second column, the middle of the drawing.
 */
function linkTuning(layout: Layout, l: GraphLink): string {
  if (layout !== 'dot') return '';
  if (l.span === 0) return ', constraint=false';
  if (l.kind === 'peer') return l.tailCluster === 0 ? '' : ', constraint=false';
  return l.span >= 2 ? ', weight=5' : '';
}

/** The graph title and a key to the three kinds of line. */
function titleLabel(t: Topology): string {
  const key = [
    `<FONT COLOR="#808080">grey: in the clear</FONT>`,
    `<FONT COLOR="#1f5fa8">solid: WireGuard</FONT>`,
    `<FONT COLOR="#b35900">dashed: WireGuard to a Peer</FONT>`,
  ].join('&#160;&#160;&#160;&#160;&#160;&#160;');
  const title = `Kilo mesh ${t.subnets.map((c) => c.networkText).join(', ')}, ${t.granularity} granularity`;
  return `<${html(title)}<BR/><FONT POINT-SIZE="10">${key}</FONT>>`;
}

/**
 * The mesh as Graphviz DOT, like Kilo's `kgctl graph`: a cluster per location (per group in
 * subnet granularity), Peers in their own cluster, one undirected line per linked pair.
 * Same topology and layout, same bytes.
 */
export function graphDOT(t: Topology, options: GraphOptions): string {
  const { clusters, peers, links } = meshGraph(t);
  const { layout } = options;
  const segmentOf = new Map<KiloNode, Segment>();
  for (const s of t.segments) for (const n of s.nodes) segmentOf.set(n, s);
  // Outside location granularity every node leads its own segment: marking them all says nothing.
  const markLeaders = t.granularity === 'location';
  const column = layout === 'dot' ? ['    rank=same;'] : [];
  // neato and circo place nodes freely: a location box would be drawn around scattered nodes
  // and mislead. There the location goes into each node's label and colour instead.
  const boxes = layout === 'dot' || layout === 'fdp';

  const out: string[] = [];
  out.push('digraph kilo {');
  out.push(`  label=${titleLabel(t)};`);
  out.push('  labelloc=t;');
  out.push('  fontname="Helvetica";');
  out.push('  outputorder=edgesfirst;');
  out.push('  overlap=false;');
  for (const a of graphTuning(layout)) out.push(`  ${a};`);
  // The wide margin leaves room for fonts wider than Helvetica, which many SVG viewers substitute.
  out.push(
    '  node [shape=box, style="rounded,filled", fillcolor="#ffffff", fontname="Helvetica", fontsize=11, margin="0.25,0.06"];',
  );
  out.push('  edge [dir=none, penwidth=1.2];');

  clusters.forEach((c, i) => {
    out.push('');
    if (boxes) {
      out.push(`  subgraph ${quote(c.id)} {`);
      // The network goes on a line of its own: one long line spills past a one-node box.
      out.push(
        `    label=${c.detail ? `<${html(c.label)}<BR/><FONT POINT-SIZE="11">${html(c.detail)}</FONT>>` : quote(c.label)};`,
      );
      out.push('    style="rounded,dashed,filled";');
      out.push('    color="#888888";');
      out.push('    fillcolor="#f4f7fb";');
      out.push(...column);
    } else {
      out.push(`  subgraph ${quote(c.id.slice('cluster_'.length))} {`);
    }
    for (const n of c.nodes) {
      const s = segmentOf.get(n)!;
      const leader = markLeaders && n === s.leader;
      // Kilo's rule is the default and needs no note; a Lease (or its fallback) says so.
      const role = s.leaderReason === 'annotation' ? 'leader' : `leader (${s.leaderReason})`;
      const notes = [...(boxes ? [] : [[c.label, c.detail].filter(Boolean).join(' ')]), ...(leader ? [role] : [])];
      const attrs = [`label=${htmlLabel(n.name, nodeLines(t, s, n), notes.join(', ') || undefined)}`];
      if (leader) attrs.push('peripheries=2');
      if (!boxes) attrs.push(`fillcolor="${palette[i % palette.length]}"`);
      else if (leader) attrs.push('fillcolor="#dce9f7"');
      out.push(`    ${quote(nodeId(n.name))} [${attrs.join(', ')}];`);
    }
    out.push('  }');
  });

  if (peers.length > 0) {
    out.push('');
    if (boxes) {
      out.push('  subgraph "cluster_peers" {');
      out.push('    label="peers";');
      out.push('    style="rounded,dashed,filled";');
      out.push('    color="#888888";');
      out.push('    fillcolor="#fbf5ee";');
    } else {
      out.push('  subgraph "peers" {');
    }
    for (const p of peers) {
      const fill = boxes ? '' : ', fillcolor="#fbf5ee"';
      out.push(`    ${quote(peerId(p.name))} [label=${htmlLabel(p.name, peerLines(t, p))}, shape=ellipse${fill}];`);
    }
    out.push('  }');
  }

  out.push('');
  const relayed = relayedLinkStyles(t, nodeId, quote);
  for (const l of links) {
    const style = relayed.get(`${l.tail}\n${l.head}`) ?? linkStyle[l.kind];
    out.push(`  ${quote(l.tail)} -> ${quote(l.head)} [${style}${linkTuning(layout, l)}];`);
  }
  out.push('}');
  return `${out.join('\n')}\n`;
}
