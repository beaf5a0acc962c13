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
 * as an end or as the relay: what its plan needs, at a cost linear in the mesh. The answer is kept
 * with the topology (an agent's pass asks twice: the plan and the probe targets); do not change it.
 */
export function relayedPairs(t: Topology, only?: string): readonly RelayedPair[] {
  // Every plan asks: a mesh where no node reports or is a spoke pays one look at each segment.
  const segments = t.segments;
  let any = false;
  for (let i = 0; i < segments.length && !any; i++)
    any = !!segments[i]!.leader.unreachable || !!segments[i]!.leader.spoke;
  if (!any) return [];
  let memo = answers.get(t);
  if (!memo) answers.set(t, (memo = new Map<string, readonly RelayedPair[]>()));
  const key = only ?? '';
  let out = memo.get(key);
  if (!out) memo.set(key, (out = computePairs(t, only)));
  return out;
}

const answers = new WeakMap<Topology, Map<string, readonly RelayedPair[]>>();

function computePairs(t: Topology, only: string | undefined): RelayedPair[] {
  let reports = 0;
  for (let i = 0; i < t.segments.length; i++) reports += t.segments[i]!.leader.unreachable?.length ?? 0;
  const cut = new Cut(t.segments, reports);
  // Kilo's agent (no relay role: no announcement) cannot take part: its pairs stay as they are.
  // Read once per segment: the leaders' fields, read per report, were most of a pass at 5 % of a
  // 5,000-node mesh (docs/performance.md#relays).
  const joins = new Uint8Array(t.segments.length);
  for (let i = 0; i < t.segments.length; i++) joins[i] = t.segments[i]!.leader.relay !== undefined ? 1 : 0;
  for (let i = 0; i < t.segments.length; i++) {
    const listed = t.segments[i]!.leader.unreachable;
    if (!listed || joins[i] === 0) continue;
    const group = cut.groups[i];
    for (let k = 0; k < listed.length; k++) {
      const j = cut.index.get(listed[k]!);
      if (j !== undefined && joins[j] === 1 && cut.groups[j] !== group) cut.add(i, j);
    }
  }
  const spokes = t.segments.filter((x) => x.leader.spoke === true && x.leader.relay !== undefined);
  if (cut.pairs.length === 0 && spokes.length === 0) return [];
  const candidates = rankedCandidates(t, cut.index);
  const pairs = new Map<string, RelayedPair>();
  if (spokes.length > 0) spokePairs(t, spokes, candidates, cut, pairs);
  const self = only === undefined ? -1 : (cut.index.get(only) ?? -2);
  // Of the others' pairs a node needs only those it relays: a node that cannot relay, none.
  const asCandidate = candidates.find((c) => c.index === self);
  const names = cut.names;
  for (let k = 0; k < cut.pairs.length; k += 2) {
    const i = cut.pairs[k]!;
    const j = cut.pairs[k + 1]!;
    const mine = only === undefined || i === self || j === self;
    if (!mine && !asCandidate) continue;
    // The pair's names in order: `a` < `b`.
    const first = names[i]! < names[j]!;
    const x = first ? i : j;
    const y = first ? j : i;
    if (!mine && !wins(asCandidate!, x, y, candidates, cut)) continue;
    const id = `${names[x]}\n${names[y]}`;
    if (pairs.has(id)) continue;
    const via = mine ? choose(x, y, candidates, cut) : asCandidate!.node.name;
    if (only === undefined || x === self || y === self || via === only)
      pairs.set(id, { a: names[x]!, b: names[y]!, via });
  }
  const out: RelayedPair[] = [];
  for (const id of [...pairs.keys()].sort()) {
    const p = pairs.get(id)!;
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
  cut: Cut,
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
        !cut.hasNames(other, hub.node.name) &&
        (o.leader.spoke !== true || hubOf(o)?.node.name === hub.node.name);
      pairs.set(key, { a, b, via: usable ? hub.node.name : null, spoke: true });
    }
  }
}

/** A spoke's hub: the best candidate of another group that it reaches directly. */
function best(name: string, group: string, candidates: readonly Candidate[], cut: Cut): Candidate | null {
  let out: { c: Candidate; hash: number } | null = null;
  for (const c of candidates) {
    if (c.group === group || cut.hasNames(name, c.node.name)) continue;
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
  /** Its segment's position in the topology. */
  index: number;
  group: string;
  /** 0: marked by an operator; 1: its location's leader; 2: any other. */
  tier: number;
}

function rankedCandidates(t: Topology, index: ReadonlyMap<string, number>): Candidate[] {
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
    out.push({ node: n, index: index.get(n.name)!, group: s.group, tier });
  }
  // By tier (stable): a choice stops after the first tier with a candidate, and within a tier the
  // hash and then the name decide, whatever the order.
  return out.sort((x, y) => x.tier - y.tier);
}

/** The relay of the pair of segments `a` and `b` (`a`'s name first): null when none qualifies. */
function choose(a: number, b: number, candidates: readonly Candidate[], cut: Cut): string | null {
  const ga = cut.groups[a];
  const gb = cut.groups[b];
  let best: Candidate | null = null;
  let bestHash = 0;
  // FNV-1a runs left to right: the pair's part ("a\nb\n") once, then each candidate's name from there.
  const prefix = pairHash(cut.names[a]!, cut.names[b]!);
  for (const c of candidates) {
    // Candidates come by tier: once one qualified, a later tier cannot win.
    if (best && c.tier > best.tier) break;
    // A WireGuard peer of both ends (another group than either), reached directly by both; the
    // reachability asked only of a candidate that would win.
    if (c.group === ga || c.group === gb) continue;
    const hash = fnv(prefix, c.node.name) >>> 0;
    if (best && (hash < bestHash || (hash === bestHash && c.node.name > best.node.name))) continue;
    if (cut.has(a, c.index) || cut.has(b, c.index)) continue;
    best = c;
    bestHash = hash;
  }
  return best?.node.name ?? null;
}

/**
 * Whether `choose` picks `me` for the pair (the same rules), cheaper than choosing: most pairs
 * have a qualified candidate of a better tier, or one whose hash beats `me`'s, found in a few steps.
 */
function wins(me: Candidate, a: number, b: number, candidates: readonly Candidate[], cut: Cut): boolean {
  const ga = cut.groups[a];
  const gb = cut.groups[b];
  if (me.group === ga || me.group === gb || cut.has(a, me.index) || cut.has(b, me.index)) return false;
  const prefix = pairHash(cut.names[a]!, cut.names[b]!);
  const mine = fnv(prefix, me.node.name) >>> 0;
  for (const c of candidates) {
    if (c.tier > me.tier) break;
    if (c === me || c.group === ga || c.group === gb) continue;
    if (c.tier === me.tier) {
      const hash = fnv(prefix, c.node.name) >>> 0;
      if (hash < mine || (hash === mine && c.node.name > me.node.name)) continue;
    }
    if (!cut.has(a, c.index) && !cut.has(b, c.index)) return false;
  }
  return true;
}

/**
 * The unreachable pairs as positions of segments, each once, with each segment's partners for the
 * many "is this pair cut" questions a choice asks: numbers, not a key string per question.
 */
class Cut {
  /** A segment's leader's name → its position. */
  readonly index = new Map<string, number>();
  readonly names: string[] = [];
  readonly groups: string[] = [];
  /** The pairs, two positions each, in the order reported. */
  readonly pairs: number[] = [];
  /** Each pair as one number (the lower position × the segment count + the higher): no object per pair. */
  private readonly keys: PairSet | SetOfPairs;

  /** `reports`: how many names the segments' leaders list in all, the most pairs there can be. */
  constructor(segments: readonly Segment[], reports: number) {
    // Past 46,340 segments a pair's number no longer fits an Int32Array's slot.
    this.keys = segments.length <= 46_340 ? new PairSet(reports) : new SetOfPairs();
    for (let i = 0; i < segments.length; i++) {
      this.index.set(segments[i]!.leader.name, i);
      this.names.push(segments[i]!.leader.name);
      this.groups.push(segments[i]!.group);
    }
  }

  add(i: number, j: number): void {
    const key = i < j ? i * this.names.length + j : j * this.names.length + i;
    if (this.keys.add(key)) this.pairs.push(i, j);
  }

  has(i: number, j: number): boolean {
    return this.keys.has(i < j ? i * this.names.length + j : j * this.names.length + i);
  }

  hasNames(x: string, y: string): boolean {
    const i = this.index.get(x);
    const j = this.index.get(y);
    return i !== undefined && j !== undefined && this.has(i, j);
  }
}

/**
 * A set of pair numbers (below 2³¹: positions of up to 46,340 segments), open addressing in one
 * Int32Array sized once for `capacity` numbers: at 5 % of a 5,000-node mesh's pairs (1.2 million
 * reports, 0.6 million pairs) a Set<number> spent most of a pass growing and hashing (docs/performance.md#relays).
 */
class PairSet {
  /** Each slot the number + 1; 0: empty. */
  private readonly slots: Int32Array;
  private readonly mask: number;
  /** Fibonacci hashing takes the product's high bits: its low ones repeat the key's. */
  private readonly shift: number;

  constructor(capacity: number) {
    let size = 16;
    // At most two thirds full, whatever the reports (both ends of a pair usually list each other: a third).
    while (size <= capacity * 1.5) size *= 2;
    this.slots = new Int32Array(size);
    this.mask = size - 1;
    this.shift = 32 - Math.log2(size);
  }

  /** Adds `key`; false when it was there already. */
  add(key: number): boolean {
    const at = this.slotOf(key);
    if (this.slots[at] !== 0) return false;
    this.slots[at] = key + 1;
    return true;
  }

  has(key: number): boolean {
    return this.slots[this.slotOf(key)] !== 0;
  }

  /** The slot holding `key`, or the empty one where it would go. */
  private slotOf(key: number): number {
    let at = Math.imul(key, 0x9e3779b1) >>> this.shift;
    for (;;) {
      const v = this.slots[at]!;
      if (v === 0 || v === key + 1) return at;
      at = (at + 1) & this.mask;
    }
  }
}

/** PairSet's add and has over a Set<number>, for meshes too big for its slots. */
class SetOfPairs {
  private readonly set = new Set<number>();
  add(key: number): boolean {
    if (this.set.has(key)) return false;
    this.set.add(key);
    return true;
  }
  has(key: number): boolean {
    return this.set.has(key);
  }
}

/** The pair's identity, its names in order. */
export function pairKey(x: string, y: string): string {
  return x < y ? `${x}\n${y}` : `${y}\n${x}`;
}

/** FNV-1a, 32 bits: the same on every node and every platform. */
function rendezvous(text: string): number {
  return fnv(0x811c9dc5, text) >>> 0;
}

/** FNV-1a of "a\nb\n": where each candidate's rendezvous hash for the pair goes on from. */
function pairHash(a: string, b: string): number {
  return fnv(fnv(fnv(fnv(0x811c9dc5, a), '\n'), b), '\n');
}

/** FNV-1a from `start` over `text`, made unsigned (`>>> 0`) only at the end. */
function fnv(start: number, text: string): number {
  let h = start;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h;
}
