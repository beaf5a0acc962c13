/**
 * The annotations a node's agent publishes, as Kilo publishes them: `discovered-endpoints` is `{}`
 * when nothing roams; an `endpoint` already on the Node is kept (Kilo's); the internal IP is
 * detected again at every start (kilo-ts's: see docs/migrating-from-kilo.md).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { annotationPatch, type LocalFacts } from '../../src/agent/local-node.js';
import { Annotation } from '../../src/model/annotations.js';
import { Cidr, IP } from '../../src/net/cidr.js';
import { NOW } from '../helpers/cluster.js';

const facts: LocalFacts = {
  publicKey: 'k',
  endpoint: '198.18.1.11:51820',
  internalIP: Cidr.parse('192.168.1.11/24'),
  wireGuardIP: null,
  granularity: 'full',
  discoveredEndpoints: new Map(),
  now: NOW,
};

describe('local node annotations', () => {
  test('discovered-endpoints: {} when nothing roams, as Kilo writes it; the endpoints when something does', () => {
    assert.equal(annotationPatch({}, facts)?.[Annotation.discoveredEndpoints], '{}');
    const roaming = new Map([['peerkey=', { ip: IP.parse('198.18.2.1'), dns: null, port: 1024 }]]);
    assert.equal(
      annotationPatch({}, { ...facts, discoveredEndpoints: roaming })?.[Annotation.discoveredEndpoints],
      '{"peerkey=":{"IP":"198.18.2.1","Port":1024,"Zone":""}}',
    );
    // Kilo's `{}` on a node switched to kilo-ts is left alone.
    const current = { [Annotation.discoveredEndpoints]: '{}', [Annotation.lastSeen]: String(NOW) };
    assert.equal(annotationPatch(current, facts)?.[Annotation.discoveredEndpoints], undefined);
  });

  test('an endpoint already on the Node is kept; a stale internal IP is replaced by the detected one', () => {
    const current = {
      [Annotation.endpoint]: '203.0.113.7:51820',
      [Annotation.internalIP]: '10.42.1.1/24',
      [Annotation.lastSeen]: String(NOW),
    };
    const patch = annotationPatch(current, facts);
    assert.equal(patch?.[Annotation.endpoint], undefined);
    assert.equal(patch?.[Annotation.internalIP], '192.168.1.11/24');
    assert.equal(annotationPatch({}, facts)?.[Annotation.endpoint], '198.18.1.11:51820');
  });
});
