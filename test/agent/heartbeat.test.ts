import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { onlyLastSeenMoved } from '../../src/agent/heartbeat.js';
import { Annotation } from '../../src/model/annotations.js';
import type { KubeObject } from '../../src/model/parse.js';
import { NOW, node, peer } from '../helpers/cluster.js';

function withAnnotations(o: KubeObject, a: Record<string, string>): KubeObject {
  return { ...o, metadata: { ...o.metadata, annotations: { ...o.metadata?.annotations, ...a } } };
}

describe('onlyLastSeenMoved', () => {
  const b = node('b', { location: 'eu', lastSeen: NOW });
  const later = withAnnotations(b, { [Annotation.lastSeen]: String(NOW + 30) });

  test('a newer last-seen and nothing else is a heartbeat, whatever the key order', () => {
    assert.equal(onlyLastSeenMoved({ previous: b, current: later }), true);
    const reordered = { ...later, metadata: { ...later.metadata, annotations: { ...later.metadata?.annotations } } };
    const entries = Object.entries(reordered.metadata.annotations).reverse();
    reordered.metadata.annotations = Object.fromEntries(entries);
    assert.equal(onlyLastSeenMoved({ previous: b, current: reordered }), true);
  });

  test('anything the mesh reads changing too is not', () => {
    const moved = withAnnotations(later, { [Annotation.endpoint]: '192.0.2.99:51820' });
    assert.equal(onlyLastSeenMoved({ previous: b, current: moved }), false);
    const added = withAnnotations(later, { [Annotation.leader]: 'true' });
    assert.equal(onlyLastSeenMoved({ previous: b, current: added }), false);
    const relabelled = { ...later, metadata: { ...later.metadata, labels: { 'topology.kubernetes.io/region': 'us' } } };
    assert.equal(onlyLastSeenMoved({ previous: b, current: relabelled }), false);
    const respec = { ...later, spec: { podCIDR: '10.42.99.0/24' } };
    assert.equal(onlyLastSeenMoved({ previous: b, current: respec }), false);
    // Label and spec maps compared key by key: a key swapped for another, a nested value changed.
    const region = b.metadata?.labels?.['topology.kubernetes.io/region'] ?? '';
    const labelled = (labels: Record<string, string>, o: KubeObject) => ({ ...o, metadata: { ...o.metadata, labels } });
    const withOther = labelled({ 'topology.kubernetes.io/region': region, other: 'x' }, b);
    const withExtra = labelled({ 'topology.kubernetes.io/region': region, extra: 'x' }, later);
    assert.equal(onlyLastSeenMoved({ previous: withOther, current: withExtra }), false);
    const cidrs = (list: string[]) => ({ ...later, spec: { ...b.spec, podCIDRs: list } });
    const before = { ...b, spec: { ...b.spec, podCIDRs: ['10.42.1.0/24'] } };
    assert.equal(onlyLastSeenMoved({ previous: before, current: cidrs(['10.42.9.0/24']) }), false);
    assert.equal(onlyLastSeenMoved({ previous: before, current: cidrs(['10.42.1.0/24']) }), true);
  });

  test('path-health beside last-seen is a heartbeat (no plan reads it); a mesh annotation beside both is not', () => {
    const health = (o: KubeObject, value: string) => withAnnotations(o, { [Annotation.pathHealth]: value });
    const was = health(b, '{"pairs":{"ok":1}}');
    assert.equal(onlyLastSeenMoved({ previous: was, current: health(later, '{"pairs":{"ok":2}}') }), true);
    // Published for the first time, or gone.
    assert.equal(onlyLastSeenMoved({ previous: b, current: health(later, '{"pairs":{"ok":2}}') }), true);
    assert.equal(onlyLastSeenMoved({ previous: was, current: later }), true);
    // Path-health alone, last-seen where it was.
    assert.equal(onlyLastSeenMoved({ previous: was, current: health(b, 'x') }), true);
    const moved = withAnnotations(health(later, '{"pairs":{"ok":2}}'), { [Annotation.endpoint]: '192.0.2.99:51820' });
    assert.equal(onlyLastSeenMoved({ previous: was, current: moved }), false);
    const added = withAnnotations(health(later, 'y'), { [Annotation.unreachable]: 'c' });
    assert.equal(onlyLastSeenMoved({ previous: was, current: added }), false);
  });

  test('last-seen going back, vanishing or unreadable is not; nor is a Peer', () => {
    assert.equal(onlyLastSeenMoved({ previous: later, current: b }), false);
    const none = { ...b, metadata: { ...b.metadata, annotations: { ...b.metadata?.annotations } } };
    delete none.metadata.annotations[Annotation.lastSeen];
    assert.equal(onlyLastSeenMoved({ previous: b, current: none }), false);
    assert.equal(
      onlyLastSeenMoved({ previous: b, current: withAnnotations(b, { [Annotation.lastSeen]: 'x' }) }),
      false,
    );
    const p = peer('laptop');
    assert.equal(onlyLastSeenMoved({ previous: p, current: p }), false);
  });
});
