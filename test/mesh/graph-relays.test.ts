import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { graphDOT } from '../../src/mesh/graph.js';
import { summaryDOT } from '../../src/mesh/graph-summary.js';
import { Annotation } from '../../src/model/annotations.js';
import { node, topologyFor } from '../helpers/cluster.js';

/** Nodes eu-0, eu-1, us-0, ap-0 (kilo-ts agents); eu-0 cannot reach us-0, so ap-0 relays them. */
function relayedMesh(extra: Record<string, Record<string, string>> = {}) {
  const spec = [
    ['eu-0', 'eu'],
    ['eu-1', 'eu'],
    ['us-0', 'us'],
    ['ap-0', 'ap'],
  ] as const;
  return spec.map(([name, location], i) =>
    node(name, {
      location,
      internalIP: `10.1.${i + 1}.1/24`,
      endpoint: `198.51.100.${i + 1}:51820`,
      podCIDR: `10.2.${i + 1}.0/24`,
      annotations: { [Annotation.meshFlags]: '{"port":51820}', ...(extra[name] ?? {}) },
    }),
  );
}

const cross = { granularity: 'cross' as const };
const unreachable = { 'eu-0': { [Annotation.unreachable]: 'us-0' } };

describe('kgctl graph: relayed pairs', () => {
  test('the full graph draws the direct link dotted, labelled with the relay', () => {
    const dot = graphDOT(topologyFor(relayedMesh(unreachable), 'eu-0', cross), { layout: 'dot' });
    const direct = dot
      .split('\n')
      .filter((l) => l.includes('"node/eu-0"') && l.includes('"node/us-0"') && l.includes('->'));
    assert.equal(direct.length, 1, dot);
    assert.match(direct[0]!, /style=dotted, color="#c0392b", label="relayed through ap-0"/);
    assert.doesNotMatch(graphDOT(topologyFor(relayedMesh(), 'eu-0', cross), { layout: 'dot' }), /relayed/);
  });

  test('the summary draws the pair through its relay’s location', () => {
    const dot = summaryDOT(topologyFor(relayedMesh(unreachable), 'eu-0', cross));
    const red = dot.split('\n').filter((l) => l.includes('#c0392b'));
    assert.deepEqual(
      red.map((l) => l.trim().replace(/ \[.*$/, '')),
      ['"place/eu" -> "place/ap"', '"place/ap" -> "place/us"'],
    );
    for (const l of red) assert.match(l, /label="1 relayed eu ↔ us"/);
    assert.doesNotMatch(summaryDOT(topologyFor(relayedMesh(), 'eu-0', cross)), /relayed|#c0392b/);
  });

  test('the summary draws a pair no node can relay between the ends’ locations', () => {
    const refusing = { ...unreachable, 'ap-0': { [Annotation.relay]: 'false' } };
    const dot = summaryDOT(topologyFor(relayedMesh(refusing), 'eu-0', cross));
    assert.match(dot, /"place\/eu" -> "place\/us" \[label="1 pairs: no direct path, no relay", style=dotted/);
  });
});
