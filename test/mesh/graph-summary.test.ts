import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { meshGraph } from '../../src/mesh/graph.js';
import { summaryDOT } from '../../src/mesh/graph-summary.js';
import type { Granularity } from '../../src/model/types.js';
import { topologyFor, twoLocations } from '../helpers/cluster.js';

/** The tunnel counts the summary prints, per line style. */
function counts(dot: string): { wireguard: number; plain: number; peer: number; inside: number } {
  const sum = (re: RegExp) => [...dot.matchAll(re)].reduce((n, m) => n + Number(m[1]), 0);
  return {
    wireguard: sum(/label="(\d+)", color="#1f5fa8"/g),
    plain: sum(/label="(\d+)", style=dotted/g),
    peer: sum(/label="(\d+)", style=dashed/g),
    inside: sum(/(\d+) tunnels inside/g),
  };
}

describe('kgctl graph summary', () => {
  for (const granularity of ['location', 'cross', 'full', 'subnet'] as Granularity[]) {
    test(`${granularity}: the tunnels it counts are the full graph's links`, () => {
      const t = topologyFor(twoLocations(), 'eu-a', { granularity });
      const links = meshGraph(t).links;
      const c = counts(summaryDOT(t));
      const kinds = (k: string) => links.filter((l) => l.kind === k).length;
      assert.equal(c.wireguard + c.inside, kinds('wireguard'), 'WireGuard tunnels');
      assert.equal(c.peer, kinds('peer'), 'tunnels to Peers');
    });
  }

  test('cross: locations are vertices, the tunnels between them one labelled line', () => {
    const dot = summaryDOT(topologyFor(twoLocations(), 'eu-a', { granularity: 'cross' }));
    assert.match(dot, /"place\/eu" \[label="eu\\n3 nodes, 3 segments"\]/);
    assert.match(dot, /"place\/eu" -> "place\/us" \[label="6", color="#1f5fa8"\]/);
    assert.match(dot, /"place\/us" -> "peers" \[label="2", style=dashed/);
    assert.equal(dot.split('\n').filter((l) => l.includes('->')).length, 3);
  });
});
