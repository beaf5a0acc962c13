import type { KiloNode } from '../model/types.js';
import { electLeader, type Segment, type Topology } from './topology.js';

/**
 * Two WireGuard peers that cannot reach each other directly, and the node their traffic goes
 * through instead (docs/relays.md). `a` < `b` by name; `via` is null when no node qualifies (the
 * pair stays broken, and says so).
 */
export interface RelayedPair {
  a: string;
  b: string;
  via: string | null;
  /** Relayed because an end is a spoke (hub and spoke): the direct entry goes altogether. */
  spoke?: true;
}

/**
 * The relayed pairs of the mesh, from published data alone, so both ends and the relay compute the
 * same (pure). A pair is relayed when either end lists the other in kilo.squat.ai/unreachable
 * (WireGuard peers only: segment leaders in different groups). Its relay is a node both ends reach
 * directly (a WireGuard peer of both whose pair with neither end is relayed) whose agent allows
 * relaying: operator-marked relays first, then location leaders, then any; within the best tier
 * the highest rendezvous hash of pair and candidate, so pairs spread over the candidates and one
 * node's leaving moves only its own pairs. With `only`, just the pairs that node takes part in,
 * as an end or as the relay: what its plan needs, at a cost linear in the mesh.
 */
export function relayedPairs(t: Topology, only?: string): RelayedPair[] {
  // Every plan asks: a mesh where no node reports or is a spoke pays one look at each segment.
  const segments = t.segments;
  let any = false;
  for (let i = 0; i < segments.length && !any; i++)
    any = !!segments[i]!.leader.unreachable || !!segments[i]!.leader.spoke;
  if (!any) return [];
  const leaders = new Map<string, Segment>();
  for (const s of t.segments) leaders.set(s.leader.name, s);
  const cut = new Set<string>();
  for (const s of t.segments) {
    const n = s.leader;
    if (!n.unreachable) continue;
    for (const m of n.unreachable) {
      const other = leaders.get(m);
      // Kilo's agent (no relay role: no announcement) cannot take part: its pairs stay as they are.
      if (other && other.group !== s.group && other.leader.relay !== undefined && n.relay !== undefined)
        cut.add(pairKey(n.name, m));
    }
  }
  const spokes = t.segments.filter((x) => x.leader.spoke === true && x.leader.relay !== undefined);
  if (cut.size === 0 && spokes.length === 0) return [];
  const candidates = rankedCandidates(t);
  const pairs = new Map<string, RelayedPair>();
  if (spokes.length > 0) spokePairs(t, spokes, candidates, cut, pairs);
  for (const key of cut) {
    if (pairs.has(key)) continue;
    const [a, b] = key.split('\n') as [string, string];
    const via = choose(a, b, leaders.get(a)!.group, leaders.get(b)!.group, candidates, cut);
    pairs.set(key, { a, b, via });
  }
  const out: RelayedPair[] = [];
  for (const key of [...pairs.keys()].sort()) {
    const p = pairs.get(key)!;
    if (only === undefined || only === p.a || only === p.b || only === p.via) out.push(p);
  }
  return out;
}

/**
 * Hub and spoke (squat/kilo#394): a spoke peers only with its hub, the best candidate for the
 * spoke alone (tiers, then the rendezvous hash of its name), and every other WireGuard pair of it
 * goes through that hub. A pair the hub cannot carry (the hub is no WireGuard peer of the other
 * end, which is in the hub's own group; the other end cannot reach it; two spokes of different
 * hubs) is left direct, with `via` null when the hub is unusable for a reason the operator can fix.
 */
function spokePairs(
  t: Topology,
  spokes: readonly Segment[],
  candidates: readonly Candidate[],
  cut: ReadonlySet<string>,
  pairs: Map<string, RelayedPair>,
): void {
  const hubs = new Map<string, Candidate | null>();
  const hubOf = (s: Segment): Candidate | null => {
    let h = hubs.get(s.leader.name);
    if (h === undefined) hubs.set(s.leader.name, (h = best(s.leader.name, s.group, candidates, cut)));
    return h;
  };
  for (const s of spokes) {
    const hub = hubOf(s);
    for (const o of t.segments) {
      const other = o.leader.name;
      if (o.group === s.group || other === hub?.node.name || o.leader.relay === undefined) continue;
      const key = pairKey(s.leader.name, other);
      if (pairs.has(key)) continue;
      // The hub's group reaches it in the clear: those nodes keep their direct path to the spoke.
      if (hub && o.group === hub.group) continue;
      const [a, b] = key.split('\n') as [string, string];
      const usable =
        hub !== null &&
        !cut.has(pairKey(other, hub.node.name)) &&
        (o.leader.spoke !== true || hubOf(o)?.node.name === hub.node.name);
      pairs.set(key, { a, b, via: usable ? hub.node.name : null, spoke: true });
    }
  }
}

/** A spoke's hub: the best candidate of another group that it reaches directly. */
function best(
  name: string,
  group: string,
  candidates: readonly Candidate[],
  cut: ReadonlySet<string>,
): Candidate | null {
  let out: { c: Candidate; hash: number } | null = null;
  for (const c of candidates) {
    if (c.group === group || cut.has(pairKey(name, c.node.name))) continue;
    const hash = rendezvous(`${name}\n${c.node.name}`);
    if (
      !out ||
      c.tier < out.c.tier ||
      (c.tier === out.c.tier && (hash > out.hash || (hash === out.hash && c.node.name < out.c.node.name)))
    )
      out = { c, hash };
  }
  return out?.c ?? null;
}

interface Candidate {
  node: KiloNode;
  group: string;
  /** 0: marked by an operator; 1: its location's leader; 2: any other. */
  tier: number;
}

function rankedCandidates(t: Topology): Candidate[] {
  // A location's leader by Kilo's rule over its nodes (in `location` granularity the segment's leader).
  const byGroup = new Map<string, KiloNode[]>();
  for (const s of t.segments) {
    const list = byGroup.get(s.group);
    if (list) list.push(...s.nodes);
    else byGroup.set(s.group, [...s.nodes]);
  }
  const groupLeader = new Map<string, string>();
  for (const [g, nodes] of byGroup) groupLeader.set(g, electLeader(nodes).name);
  const out: Candidate[] = [];
  for (const s of t.segments) {
    const n = s.leader;
    if (n.relay === undefined || n.relay === 'never' || n.spoke === true) continue;
    const tier = n.relay === 'prefer' ? 0 : groupLeader.get(s.group) === n.name ? 1 : 2;
    out.push({ node: n, group: s.group, tier });
  }
  return out;
}

function choose(
  a: string,
  b: string,
  ga: string,
  gb: string,
  candidates: readonly Candidate[],
  cut: ReadonlySet<string>,
): string | null {
  let best: { tier: number; hash: number; name: string } | null = null;
  for (const c of candidates) {
    const name = c.node.name;
    // A WireGuard peer of both ends (another group than either), reached directly by both.
    if (c.group === ga || c.group === gb || cut.has(pairKey(a, name)) || cut.has(pairKey(b, name))) continue;
    const hash = rendezvous(`${a}\n${b}\n${name}`);
    if (
      !best ||
      c.tier < best.tier ||
      (c.tier === best.tier && (hash > best.hash || (hash === best.hash && name < best.name)))
    )
      best = { tier: c.tier, hash, name };
  }
  return best?.name ?? null;
}

/** The pair's identity, its names in order. */
export function pairKey(x: string, y: string): string {
  return x < y ? `${x}\n${y}` : `${y}\n${x}`;
}

/** FNV-1a, 32 bits: the same on every node and every platform. */
function rendezvous(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
