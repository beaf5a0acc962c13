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
  const leaders = new Map<string, Segment>();
  for (const s of t.segments) leaders.set(s.leader.name, s);
  const cut = new Set<string>();
  for (const s of t.segments) {
    const n = s.leader;
    if (!n.unreachable) continue;
    for (const m of n.unreachable) {
      const other = leaders.get(m);
      if (other && other.group !== s.group) cut.add(pairKey(n.name, m));
    }
  }
  if (cut.size === 0) return [];
  const candidates = rankedCandidates(t);
  const out: RelayedPair[] = [];
  for (const key of [...cut].sort()) {
    const [a, b] = key.split('\n') as [string, string];
    const ga = leaders.get(a)!.group;
    const gb = leaders.get(b)!.group;
    const via = choose(a, b, ga, gb, candidates, cut);
    if (only === undefined || only === a || only === b || only === via) out.push({ a, b, via });
  }
  return out;
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
    if (n.relay === undefined || n.relay === 'never') continue;
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
