import type { Plan } from '../mesh/types.js';

/** The plan's relayed pairs as `kgctl plan` heads them (docs/relays.md); none: no lines, the output as before. */
export function relayText(plan: Plan): string[] {
  if (!plan.relays || plan.relays.length === 0) return [];
  return [
    '# relayed pairs (they cannot reach each other directly; docs/relays.md):',
    ...plan.relays.map(
      (r) =>
        `#   ${r.pair[0]} <-> ${r.pair[1]}${r.spoke ? ' (a spoke)' : ''}: ${r.via === null ? 'no node can relay: broken' : r.via === plan.node ? 'through this node' : `through ${r.via}`}`,
    ),
    '',
  ];
}
