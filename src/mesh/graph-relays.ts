import { relayedPairs } from './relays.js';
import type { Topology } from './topology.js';

/**
 * How `kgctl graph` draws relayed pairs (relays.ts): the direct WireGuard link dotted and red,
 * labelled with its relay (its links to both ends are drawn anyway, as WireGuard links), so the
 * eye follows the pair through the relay. Keyed by the link's two vertex ids in either order; empty
 * when no pair is relayed, so the graph is as before.
 */
export function relayedLinkStyles(
  t: Topology,
  nodeId: (name: string) => string,
  quote: (s: string) => string,
): Map<string, string> {
  const out = new Map<string, string>();
  for (const p of relayedPairs(t)) {
    const label = p.via === null ? 'no direct path, no relay' : `relayed through ${p.via}`;
    const style = `style=dotted, color="#c0392b", label=${quote(label)}, fontsize=9, fontcolor="#c0392b"`;
    out.set(`${nodeId(p.a)}\n${nodeId(p.b)}`, style);
    out.set(`${nodeId(p.b)}\n${nodeId(p.a)}`, style);
  }
  return out;
}
