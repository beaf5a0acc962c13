import { relayedPairs } from './relays.js';
import type { Segment, Topology } from './topology.js';

/**
 * The relayed pairs (relays.ts) in the summary by location: drawn through their relay's place, a
 * red dashed line from each end's place to the relay's, per (end place, end place, relay place)
 * labelled with its pair count, so the eye follows them as in the full graph; pairs no node can
 * relay, one red dotted line between the ends' places. At most places³ lines whatever the number
 * of pairs; none when no pair is relayed, so the summary is as before.
 */
export function summaryRelayLines(
  t: Topology,
  placeOf: (s: Segment) => { id: string; label: string },
  quote: (s: string) => string,
): string[] {
  const pairs = relayedPairs(t);
  if (pairs.length === 0) return [];
  const byLeader = new Map<string, Segment>();
  for (const s of t.segments) byLeader.set(s.leader.name, s);
  const groups = new Map<string, { a: string; b: string; via: string | null; pairs: number; label: string }>();
  for (const p of pairs) {
    let [a, b] = [placeOf(byLeader.get(p.a)!), placeOf(byLeader.get(p.b)!)];
    if (b.id < a.id) [a, b] = [b, a];
    const via = p.via === null ? null : placeOf(byLeader.get(p.via)!).id;
    const key = `${a.id}\n${b.id}\n${via ?? ''}`;
    const g = groups.get(key);
    if (g) g.pairs++;
    else groups.set(key, { a: a.id, b: b.id, via, pairs: 1, label: `${a.label} ↔ ${b.label}` });
  }
  const red = 'color="#c0392b", fontcolor="#c0392b", fontsize=9';
  const out = [''];
  for (const key of [...groups.keys()].sort()) {
    const g = groups.get(key)!;
    if (g.via === null) {
      out.push(
        `  ${quote(g.a)} -> ${quote(g.b)} [label=${quote(`${g.pairs} pairs: no direct path, no relay`)}, style=dotted, ${red}];`,
      );
      continue;
    }
    const label = quote(`${g.pairs} relayed ${g.label}`);
    out.push(`  ${quote(g.a)} -> ${quote(g.via)} [label=${label}, style=dashed, ${red}];`);
    out.push(`  ${quote(g.via)} -> ${quote(g.b)} [label=${label}, style=dashed, ${red}];`);
  }
  return out;
}
