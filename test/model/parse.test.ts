import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Annotation } from '../../src/model/annotations.js';
import { shownValue, ValidationError, withheld } from '../../src/model/errors.js';
import { parseCluster, parseNode, parsePeer, type KubeObject, type ParsedObject } from '../../src/model/parse.js';
import { kiloNode, kiloPeer, node, peer, wgKey, type NodeSpec } from '../helpers/cluster.js';

const good: NodeSpec = {
  location: 'eu',
  internalIP: '10.1.0.5/24',
  endpoint: '198.51.100.1:51820',
  podCIDR: '10.2.1.0/24',
};
const shortKey = Buffer.alloc(16, 7).toString('base64');
const longKey = Buffer.alloc(33, 7).toString('base64');

/**
 * Asserts the object is rejected with exactly one error that names the object, the field and
 * the value — what an operator needs to find and fix it.
 */
function assertRejected(obj: KubeObject, object: string, field: string, value: unknown): ValidationError {
  const p = obj.kind === 'Node' ? parseNode(obj) : parsePeer(obj);
  assert.equal(p.ok, false, `expected ${object} to be rejected for ${field}=${JSON.stringify(value)}`);
  if (p.ok) throw new Error('unreachable');
  assert.equal(p.errors.length, 1, p.errors.map((e) => e.message).join('\n'));
  const e = p.errors[0]!;
  assert.ok(e instanceof ValidationError);
  assert.equal(e.object, object);
  assert.ok(e.field.includes(field), `field ${e.field} should name ${field}`);
  // Errors carry the value as they show it: objects as a short sketch, secrets withheld.
  const shown = field.includes('presharedKey') ? withheld : shownValue(value);
  assert.deepEqual(e.value, shown);
  assert.ok(e.message.includes(object), e.message);
  assert.ok(e.message.includes(field), e.message);
  const text =
    typeof value === 'object' && value !== null && shown !== withheld ? String(shown) : JSON.stringify(shown);
  assert.ok(e.message.includes(text), e.message);
  return e;
}

const rejectedNode = (spec: NodeSpec, field: string, value: unknown) =>
  assertRejected(node('x', { ...good, ...spec }), 'Node "x"', field, value);
const rejectNode = (spec: NodeSpec, field: string, value: unknown): void => void rejectedNode(spec, field, value);

describe('parseNode rejects malformed values', () => {
  const bad = ['10.1.0.5', '10.1.0.5/33', '10.1.0/24', 'fd00::1/129', 'nonsense', '10.1.0.5/24/1', '1/8'];
  for (const v of bad) {
    test(`internal-ip ${JSON.stringify(v)}`, () => rejectNode({ internalIP: v }, Annotation.internalIP, v));
    test(`force-internal-ip ${JSON.stringify(v)}`, () =>
      rejectNode({ forceInternalIP: v }, Annotation.forceInternalIP, v));
    test(`podCIDR ${JSON.stringify(v)}`, () => rejectNode({ podCIDR: v }, 'spec.podCIDR', v));
  }

  test('one bad allowed-location IP among good ones', () => {
    rejectNode(
      { allowedLocationIPs: '192.168.5.0/24,192.168.300.0/24,10.9.0.0/16' },
      Annotation.allowedLocationIPs,
      '192.168.300.0/24',
    );
  });

  test('key that is not base64', () => rejectNode({ key: 'not a key!' }, Annotation.key, 'not a key!'));
  test('key of 16 bytes', () => rejectNode({ key: shortKey }, Annotation.key, shortKey));
  test('key of 33 bytes', () => rejectNode({ key: longKey }, Annotation.key, longKey));
  test('key without padding', () => {
    const k = wgKey('a').slice(0, 43);
    rejectNode({ key: k }, Annotation.key, k);
  });

  for (const v of [
    '198.51.100.1',
    '198.51.100.1:0',
    '198.51.100.1:70000',
    '[::1]',
    '[::1]51820',
    '1.2.3:51820',
    '::1:51820',
    'host:',
    ':51820',
    '198.51.100.1:port',
    '[10.0.0.1]:51820',
  ]) {
    test(`endpoint ${JSON.stringify(v)}`, () => rejectNode({ endpoint: v }, Annotation.endpoint, v));
    test(`force-endpoint ${JSON.stringify(v)}`, () => rejectNode({ forceEndpoint: v }, Annotation.forceEndpoint, v));
  }

  for (const v of ['-1', 'abc', '1.5', '86401']) {
    test(`persistent-keepalive ${JSON.stringify(v)}`, () =>
      rejectNode({ keepalive: v }, Annotation.persistentKeepalive, v));
  }

  test('last-seen that is not a number', () => rejectNode({ lastSeen: 'yesterday' }, Annotation.lastSeen, 'yesterday'));

  test('discovered-endpoints that is not JSON', () =>
    rejectNode({ discovered: '{"a":' }, Annotation.discoveredEndpoints, '{"a":'));
  for (const v of ['[]', '"x"', '42', 'null']) {
    test(`discovered-endpoints of wrong shape ${v}`, () =>
      rejectNode({ discovered: v }, Annotation.discoveredEndpoints, v));
  }
  test('discovered-endpoints with a bad key inside', () => {
    rejectNode(
      { discovered: { 'not-a-key': { IP: '203.0.113.9', Port: 51820 } } },
      Annotation.discoveredEndpoints,
      'not-a-key',
    );
  });
  test('discovered-endpoints with a bad endpoint inside', () => {
    const k = wgKey('roamer');
    for (const v of [{ IP: 'nope', Port: 51820 }, { IP: '203.0.113.9', Port: 0 }, { IP: '203.0.113.9' }, 'x']) {
      const e = rejectedNode({ discovered: JSON.stringify({ [k]: v }) }, Annotation.discoveredEndpoints, v);
      assert.ok(e.field.includes(k), `field ${e.field} should name the key`);
    }
  });

  test('every problem of one node is reported, not only the first', () => {
    const p = parseNode(node('x', { ...good, internalIP: 'bad', keepalive: 'abc', key: 'k' }));
    assert.equal(p.ok, false);
    if (p.ok) return;
    assert.deepEqual(
      p.errors.map((e) => e.field).sort(),
      [Annotation.internalIP, Annotation.key, Annotation.persistentKeepalive]
        .map((k) => `metadata.annotations["${k}"]`)
        .sort(),
    );
  });
});

describe('parsePeer rejects malformed values', () => {
  const rejectPeer = (spec: Parameters<typeof peer>[1], field: string, value: unknown): void =>
    void assertRejected(peer('y', { allowedIPs: ['10.5.0.1/32'], ...spec }), 'Peer "y"', field, value);

  test('no allowed IPs', () => {
    void assertRejected(peer('y', {}), 'Peer "y"', 'spec.allowedIPs', null);
    rejectPeer({ allowedIPs: [] }, 'spec.allowedIPs', []);
  });
  test('a bad allowed IP among good ones', () =>
    rejectPeer({ allowedIPs: ['10.5.0.1/32', '10.5.0.300/32'] }, 'spec.allowedIPs[1]', '10.5.0.300/32'));
  test('allowed IP without mask', () => rejectPeer({ allowedIPs: ['10.5.0.1'] }, 'spec.allowedIPs[0]', '10.5.0.1'));
  test('missing publicKey', () => rejectPeer({ publicKey: null }, 'spec.publicKey', null));
  test('publicKey not base64', () => rejectPeer({ publicKey: '!!!' }, 'spec.publicKey', '!!!'));
  test('publicKey of 16 bytes', () => rejectPeer({ publicKey: shortKey }, 'spec.publicKey', shortKey));
  for (const port of [0, 70000, -1, 1.5, '51820']) {
    test(`endpoint port ${JSON.stringify(port)}`, () =>
      rejectPeer({ endpoint: { dnsOrIP: { ip: '203.0.113.7' }, port } }, 'spec.endpoint.port', port));
  }
  test('endpoint with a bad IP', () =>
    rejectPeer({ endpoint: { dnsOrIP: { ip: '203.0.113' }, port: 51820 } }, 'spec.endpoint.dnsOrIP.ip', '203.0.113'));
  test('endpoint with a bad DNS name', () =>
    rejectPeer({ endpoint: { dnsOrIP: { dns: 'bad_name!' }, port: 51820 } }, 'spec.endpoint.dnsOrIP.dns', 'bad_name!'));
  test('presharedKey not a key: named, never shown', () => {
    const e = assertRejected(
      peer('y', { allowedIPs: ['10.5.0.1/32'], presharedKey: 'secret' }),
      'Peer "y"',
      'spec.presharedKey',
      'secret',
    );
    assert.ok(!e.message.includes('secret"'), e.message);
  });
  test('persistentKeepalive negative', () => rejectPeer({ keepalive: -1 }, 'spec.persistentKeepalive', -1));
});

describe('parseCluster', () => {
  test('a malformed object drops out, all others remain', () => {
    const c = parseCluster([
      node('a', good),
      node('b', { ...good, internalIP: '10.1.0.300/24' }),
      node('c', { ...good, endpoint: '198.51.100.3:0' }),
      node('d', good),
      peer('p1', { allowedIPs: ['10.5.0.1/32'] }),
      peer('p2', { allowedIPs: ['10.5.0.2/32'], publicKey: 'bad' }),
      peer('p3', { allowedIPs: ['10.5.0.3/32'] }),
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ignored' } },
      { apiVersion: 'example.com/v1', kind: 'Peer', metadata: { name: 'not-kilo' }, spec: {} },
    ]);
    assert.deepEqual(
      c.nodes.map((n) => n.name),
      ['a', 'd'],
    );
    assert.deepEqual(
      c.peers.map((p) => p.name),
      ['p1', 'p3'],
    );
    assert.deepEqual(
      c.errors.map((e) => e.object),
      ['Node "b"', 'Node "c"', 'Peer "p2"'],
    );
  });

  test('a node without a name is rejected', () => {
    const obj = node('', good);
    const c = parseCluster([obj]);
    assert.equal(c.nodes.length, 0);
    assert.equal(c.errors[0]?.field, 'metadata.name');
  });
});

describe('spec.podCIDRs: one pod CIDR per family', () => {
  const v4 = '10.2.1.0/24';
  const v6 = 'fd42:1::/64';
  const podCIDRsOf = (spec: NodeSpec) => kiloNode('x', { ...good, ...spec }).podCIDRs.map(String);

  test('both families, IPv4 first whichever Kubernetes lists first', () => {
    assert.deepEqual(podCIDRsOf({ podCIDR: v4, podCIDRs: [v4, v6] }), [v4, v6]);
    assert.deepEqual(podCIDRsOf({ podCIDR: v6, podCIDRs: [v6, v4] }), [v4, v6]);
    assert.deepEqual(podCIDRsOf({ podCIDR: undefined, podCIDRs: [v6, v4] }), [v4, v6]);
  });

  test('podCIDR alone, or podCIDRs of one, is one pod CIDR', () => {
    assert.deepEqual(podCIDRsOf({ podCIDR: v4 }), [v4]);
    assert.deepEqual(podCIDRsOf({ podCIDR: v6 }), [v6]);
    assert.deepEqual(podCIDRsOf({ podCIDR: v4, podCIDRs: [v4] }), [v4]);
    assert.deepEqual(podCIDRsOf({ podCIDR: v4, podCIDRs: [] }), [v4]);
    assert.deepEqual(podCIDRsOf({ podCIDR: undefined, podCIDRs: [v6] }), [v6]);
    // The same prefix written with host bits agrees (both are masked).
    assert.deepEqual(podCIDRsOf({ podCIDR: '10.2.1.7/24', podCIDRs: [v4] }), [v4]);
  });

  test('a podCIDR that contradicts podCIDRs[0] drops the node, naming the field and value', () => {
    const e = rejectedNode({ podCIDR: '10.2.9.0/24', podCIDRs: [v4, v6] }, 'spec.podCIDR', '10.2.9.0/24');
    assert.equal(e.field, 'spec.podCIDR');
    assert.match(e.message, /spec\.podCIDRs\[0\] "10\.2\.1\.0\/24"/);
    // The first of podCIDRs is what podCIDR must be, not any of them.
    rejectNode({ podCIDR: v6, podCIDRs: [v4, v6] }, 'spec.podCIDR', v6);
  });

  test('a bad second pod CIDR, or two of one family, drops the node naming spec.podCIDRs[1]', () => {
    for (const bad of ['fd42:1::/129', 'nonsense', '::/0', '10.3.0.0/16']) {
      const e = rejectedNode({ podCIDR: v4, podCIDRs: [v4, bad] }, 'spec.podCIDRs[1]', bad);
      assert.equal(e.field, 'spec.podCIDRs[1]');
    }
    rejectNode({ podCIDR: v6, podCIDRs: [v6, 'fd43::/64'] }, 'spec.podCIDRs[1]', 'fd43::/64');
  });

  test('a bad first pod CIDR, three of them, or not a list of strings drops the node', () => {
    rejectNode({ podCIDR: undefined, podCIDRs: ['10.2.1.0/33', v6] }, 'spec.podCIDRs[0]', '10.2.1.0/33');
    rejectNode({ podCIDR: v4, podCIDRs: [v4, v6, 'fd43::/64'] }, 'spec.podCIDRs', [v4, v6, 'fd43::/64']);
    const p = parseNode(node('x', { ...good, podCIDRs: [v4, 7] }));
    assert.equal(p.ok, false);
    if (!p.ok) assert.match(p.errors[0]!.message, /podCIDRs/);
  });

  test('the node with a contradiction drops out; the rest of the cluster stays', () => {
    const c = parseCluster([
      node('a', { ...good, podCIDR: '10.2.1.0/24', podCIDRs: ['10.2.2.0/24'] }),
      node('b', { ...good, podCIDR: '10.2.3.0/24', podCIDRs: ['10.2.3.0/24', 'fd42:3::/64'] }),
    ]);
    assert.deepEqual(
      c.nodes.map((n) => [n.name, n.podCIDRs.map(String)]),
      [['b', ['10.2.3.0/24', 'fd42:3::/64']]],
    );
    assert.equal(c.errors.length, 1);
    assert.equal(c.errors[0]!.object, 'Node "a"');
  });
});

describe('parseNode accepts good values', () => {
  test('IPv6 internal IP keeps its host bits and mask', () => {
    const n = kiloNode('x', { ...good, internalIP: 'fd00:1::5/64' });
    assert.equal(n.internalIPs.length, 1);
    assert.equal(n.internalIPs[0]?.ip.text, 'fd00:1::5');
    assert.equal(n.internalIPs[0]?.prefix, 64);
    assert.equal(n.internalIPs[0]?.networkText, 'fd00:1::/64');
  });

  test('IPv4 internal IP keeps its host bits; pod CIDR and allowed-location IPs are masked', () => {
    const n = kiloNode('x', { ...good, podCIDR: '10.2.1.7/24', allowedLocationIPs: ' 192.168.5.9/24 , 10.9.0.0/16,' });
    assert.deepEqual(n.internalIPs.map(String), ['10.1.0.5/24']);
    assert.deepEqual(n.podCIDRs.map(String), ['10.2.1.0/24']);
    assert.deepEqual(n.allowedLocationIPs.map(String), ['192.168.5.0/24', '10.9.0.0/16']);
  });

  test('IPv6 endpoint in brackets', () => {
    const n = kiloNode('x', { ...good, endpoint: '[fd00::1]:51820' });
    assert.equal(n.endpoint?.ip?.text, 'fd00::1');
    assert.equal(n.endpoint?.dns, null);
    assert.equal(n.endpoint?.port, 51820);
  });

  test('DNS endpoint', () => {
    const n = kiloNode('x', { ...good, endpoint: 'node-1.example.com:51821' });
    assert.equal(n.endpoint?.ip, null);
    assert.equal(n.endpoint?.dns, 'node-1.example.com');
    assert.equal(n.endpoint?.port, 51821);
  });

  test('force-endpoint overrides the detected endpoint', () => {
    const n = kiloNode('x', { ...good, endpoint: '10.1.0.5:51820', forceEndpoint: '203.0.113.5:6000' });
    assert.equal(n.endpoint?.ip?.text, '203.0.113.5');
    assert.equal(n.endpoint?.port, 6000);
  });

  test('a bad detected endpoint does not matter when force-endpoint replaces it', () => {
    const p = parseNode(node('x', { ...good, endpoint: 'garbage', forceEndpoint: '203.0.113.5:6000' }));
    assert.equal(p.ok, true);
  });

  test('force-internal-ip overrides the detected internal IP', () => {
    assert.deepEqual(kiloNode('x', { ...good, forceInternalIP: '172.16.0.9/16' }).internalIPs.map(String), [
      '172.16.0.9/16',
    ]);
  });

  for (const v of ['', '-']) {
    test(`force-internal-ip ${JSON.stringify(v)} means no internal IP`, () => {
      assert.deepEqual(kiloNode('x', { ...good, forceInternalIP: v }).internalIPs, []);
    });
  }

  test('empty internal-ip means no internal IP', () => {
    assert.deepEqual(kiloNode('x', { ...good, internalIP: '' }).internalIPs, []);
  });

  test('location annotation overrides the topology label, even when empty', () => {
    const labels = { 'topology.kubernetes.io/region': 'us-east' };
    assert.equal(kiloNode('x', { ...good, location: undefined, labels }).location, 'us-east');
    assert.equal(kiloNode('x', { ...good, location: 'eu', labels }).location, 'eu');
    assert.equal(kiloNode('x', { ...good, location: '', labels }).location, '');
  });

  test('a custom topology label is read instead of the default', () => {
    const labels = { 'topology.kubernetes.io/region': 'us-east', 'example.com/site': 'lab' };
    const p = parseNode(node('x', { ...good, location: undefined, labels }), { topologyLabel: 'example.com/site' });
    assert.ok(p.ok);
    assert.equal(p.value.location, 'lab');
    const none = parseNode(node('x', { ...good, location: undefined, labels: {} }), {
      topologyLabel: 'example.com/site',
    });
    assert.ok(none.ok);
    assert.equal(none.value.location, '');
  });

  test('leader annotation: presence means leader, whatever the value', () => {
    for (const v of ['true', 'false', '']) assert.equal(kiloNode('x', { ...good, leader: v }).wantsLeader, true, v);
    assert.equal(kiloNode('x', good).wantsLeader, false);
  });

  test('persistent keepalive, last-seen and discovered endpoints', () => {
    const k = wgKey('roamer');
    const n = kiloNode('x', {
      ...good,
      keepalive: 25,
      lastSeen: 1700000000,
      discovered: { [k]: { IP: '203.0.113.9', Port: 40000 } },
    });
    assert.equal(n.persistentKeepalive, 25);
    assert.equal(n.lastSeen, 1700000000);
    assert.equal(n.discoveredEndpoints.get(k)?.ip?.text, '203.0.113.9');
    assert.equal(n.discoveredEndpoints.get(k)?.port, 40000);
  });

  test('missing key, endpoint and pod CIDR are not errors (the node is merely not ready)', () => {
    const n = kiloNode('x', { key: null, lastSeen: null });
    assert.equal(n.key, null);
    assert.equal(n.endpoint, null);
    assert.deepEqual(n.podCIDRs, []);
    assert.equal(n.lastSeen, null);
  });
});

describe('parsePeer accepts good values', () => {
  test('IP endpoint, keepalive, preshared key', () => {
    const psk = wgKey('psk');
    const p = kiloPeer('y', {
      allowedIPs: ['10.5.0.1/32', '10.6.0.0/24'],
      endpoint: '203.0.113.7:51820',
      keepalive: 10,
      presharedKey: psk,
    });
    assert.deepEqual(p.allowedIPs.map(String), ['10.5.0.1/32', '10.6.0.0/24']);
    assert.equal(p.publicKey, wgKey('y'));
    assert.equal(p.endpoint?.ip?.text, '203.0.113.7');
    assert.equal(p.endpoint?.port, 51820);
    assert.equal(p.persistentKeepalive, 10);
    assert.equal(p.presharedKey, psk);
  });

  test('DNS endpoint and no endpoint', () => {
    assert.equal(
      kiloPeer('y', { allowedIPs: ['10.5.0.1/32'], endpoint: 'vpn.example.com:443' }).endpoint?.dns,
      'vpn.example.com',
    );
    const p = kiloPeer('y', { allowedIPs: ['10.5.0.1/32'] });
    assert.equal(p.endpoint, null);
    assert.equal(p.persistentKeepalive, 0);
    assert.equal(p.presharedKey, null);
  });
});

describe('parseCluster with a memo', () => {
  test('an object seen before keeps its parse; a changed or new object is parsed; errors still count', () => {
    const memo = new WeakMap<object, ParsedObject>();
    const a = node('a', { location: 'x', internalIP: '10.1.0.1/24', endpoint: '198.51.100.1:51820' });
    const bad = node('bad', { endpoint: 'nonsense' });
    const p = peer('p', { allowedIPs: ['10.5.0.1/32'] });
    const ignored = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } };
    const first = parseCluster([a, bad, p, ignored], { memo });
    const again = parseCluster([a, bad, p, ignored], { memo });
    assert.equal(again.nodes[0], first.nodes[0]);
    assert.equal(again.peers[0], first.peers[0]);
    assert.deepEqual(
      again.errors.map((e) => e.message),
      first.errors.map((e) => e.message),
    );
    assert.equal(first.errors.length, 1);
    // A heartbeat replaces the object in the agent's cache: the new one is parsed.
    const later = structuredClone(a);
    later.metadata!.annotations![Annotation.lastSeen] = '1764662460';
    const third = parseCluster([later, bad, p], { memo });
    assert.notEqual(third.nodes[0], first.nodes[0]);
    assert.equal(third.nodes[0]!.lastSeen, 1764662460);
    // Shape errors name the place in the list, so they are not remembered.
    assert.match(parseCluster([a, 7], { memo }).errors[0]!.message, /object #2/);
    assert.match(parseCluster([7, a], { memo }).errors[0]!.message, /object #1/);
  });
});
