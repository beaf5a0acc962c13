import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isNodeReady, isPeerReady, snapshotNow } from '../../src/model/ready.js';
import type { KiloPeer } from '../../src/model/types.js';
import { kiloNode, kiloPeer, NOW, type NodeSpec } from '../helpers/cluster.js';

const ready: NodeSpec = { endpoint: '198.51.100.1:51820', podCIDR: '10.2.1.0/24', lastSeen: NOW };

describe('isNodeReady', () => {
  test('endpoint, key, pod CIDR and a fresh last-seen make a node ready', () => {
    assert.equal(isNodeReady(kiloNode('a', ready), NOW), true);
  });

  test('an internal IP or location is not needed', () => {
    assert.equal(isNodeReady(kiloNode('a', { ...ready, internalIP: '', location: '' }), NOW), true);
  });

  test('a DNS endpoint counts as an endpoint', () => {
    assert.equal(isNodeReady(kiloNode('a', { ...ready, endpoint: 'a.example.com:51820' }), NOW), true);
  });

  test('without an endpoint the node is not ready', () => {
    assert.equal(isNodeReady(kiloNode('a', { ...ready, endpoint: undefined }), NOW), false);
  });

  test('without a key the node is not ready', () => {
    assert.equal(isNodeReady(kiloNode('a', { ...ready, key: null }), NOW), false);
  });

  test('without a pod CIDR the node is not ready', () => {
    assert.equal(isNodeReady(kiloNode('a', { ...ready, podCIDR: undefined }), NOW), false);
  });

  test('without a last-seen the node is not ready', () => {
    assert.equal(isNodeReady(kiloNode('a', { ...ready, lastSeen: null }), NOW), false);
  });

  test('last-seen exactly 60 s old is ready, 61 s old is not', () => {
    assert.equal(isNodeReady(kiloNode('a', { ...ready, lastSeen: NOW - 60 }), NOW), true);
    assert.equal(isNodeReady(kiloNode('a', { ...ready, lastSeen: NOW - 61 }), NOW), false);
  });

  test('a last-seen ahead of now (clock skew) is ready', () => {
    assert.equal(isNodeReady(kiloNode('a', { ...ready, lastSeen: NOW + 5 }), NOW), true);
  });
});

describe('isPeerReady', () => {
  test('a parsed Peer with an allowed IP and a key is ready', () => {
    assert.equal(isPeerReady(kiloPeer('p', { allowedIPs: ['10.5.0.1/32'] })), true);
  });

  test('a Peer left without allowed IPs (e.g. all claimed by others) is not ready', () => {
    const p: KiloPeer = { ...kiloPeer('p', { allowedIPs: ['10.5.0.1/32'] }), allowedIPs: [] };
    assert.equal(isPeerReady(p), false);
  });

  test('a Peer without a key is not ready', () => {
    const p: KiloPeer = { ...kiloPeer('p', { allowedIPs: ['10.5.0.1/32'] }), publicKey: '' };
    assert.equal(isPeerReady(p), false);
  });
});

describe('snapshotNow', () => {
  test('one node with a far-future last-seen does not make the others stale', () => {
    const nodes = [
      kiloNode('a', { lastSeen: NOW }),
      kiloNode('b', { lastSeen: NOW - 20 }),
      kiloNode('c', { lastSeen: NOW + 10 ** 9 }),
    ];
    assert.equal(snapshotNow(nodes), NOW);
    assert.equal(snapshotNow([...nodes].reverse()), NOW);
  });

  test('is the newest last-seen, whatever the order', () => {
    const nodes = [
      kiloNode('a', { lastSeen: 100 }),
      kiloNode('b', { lastSeen: 300 }),
      kiloNode('c', { lastSeen: null }),
      kiloNode('d', { lastSeen: 200 }),
    ];
    assert.equal(snapshotNow(nodes), 300);
    assert.equal(snapshotNow([...nodes].reverse()), 300);
  });

  test('agrees with the window over sorted check-ins on 500 random clusters', () => {
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    // The definition: the end of the newest 60 s window holding the most check-ins.
    const definition = (seen: number[]) => {
      let [now, best] = [0, 0];
      for (const to of seen)
        if (seen.filter((s) => s <= to && to - s <= 60).length >= best)
          [now, best] = [to, seen.filter((s) => s <= to && to - s <= 60).length];
      return now;
    };
    for (let c = 0; c < 500; c++) {
      const seen = Array.from({ length: Math.floor(next() * 12) }, () =>
        next() < 0.1 ? null : NOW + Math.floor(next() * 200) - (next() < 0.1 ? 10 ** 6 : 0),
      );
      const nodes = seen.map((s, i) => kiloNode(`n${i}`, { lastSeen: s }));
      const sorted = seen.filter((s): s is number => s !== null).sort((a, b) => a - b);
      assert.equal(snapshotNow(nodes), definition(sorted), JSON.stringify(seen));
    }
  });

  test('a node 61 s behind the newest is not ready offline; 60 s behind is', () => {
    const nodes = [
      kiloNode('a', { ...ready, lastSeen: NOW }),
      kiloNode('b', { ...ready, lastSeen: NOW - 61 }),
      kiloNode('c', { ...ready, lastSeen: NOW - 60 }),
    ];
    const now = snapshotNow(nodes);
    assert.deepEqual(
      nodes.filter((n) => isNodeReady(n, now)).map((n) => n.name),
      ['a', 'c'],
    );
  });
});
