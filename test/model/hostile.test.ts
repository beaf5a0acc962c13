/**
 * Hostile and broken objects (issue 12): wrong types, huge and nested values, catch-alls. Each is
 * one ValidationError naming object, field and a value cut to about 100 characters; nothing throws.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Annotation } from '../../src/model/annotations.js';
import { maxShownValue, ValidationError } from '../../src/model/errors.js';
import { parseCluster, parseEndpoint, parseNode, parsePeer } from '../../src/model/parse.js';
import { Cidr } from '../../src/net/cidr.js';
import { node, peer, wgKey } from '../helpers/cluster.js';

const good = { location: 'eu', internalIP: '10.1.0.5/24', endpoint: '198.51.100.1:51820', podCIDR: '10.2.1.0/24' };

function withAnnotation(key: string, value: unknown): unknown {
  const n = node('x', good) as { metadata: { annotations: Record<string, unknown> } };
  n.metadata.annotations[key] = value;
  return n;
}

function onlyError(p: ReturnType<typeof parseNode> | ReturnType<typeof parsePeer>): ValidationError {
  assert.equal(p.ok, false, 'expected a rejection');
  if (p.ok) throw new Error('unreachable');
  assert.ok(p.errors.length >= 1);
  for (const e of p.errors) {
    assert.ok(e instanceof ValidationError);
    assert.ok(e.message.length < 600, `message of ${e.message.length} characters`);
    assert.ok(!e.message.includes('\n'), 'one line');
  }
  return p.errors[0]!;
}

describe('wrong types in Node annotations are errors naming the annotation, never crashes', () => {
  const keys = [
    Annotation.forceInternalIP,
    Annotation.allowedLocationIPs,
    Annotation.ciliumInternalIP,
    Annotation.key,
    Annotation.endpoint,
    Annotation.location,
    Annotation.lastSeen,
  ];
  for (const key of keys) {
    for (const value of [5, null, false, 0, {}, ['x'], true]) {
      test(`${key}: ${JSON.stringify(value)}`, () => {
        const e = onlyError(parseNode(withAnnotation(key, value)));
        assert.equal(e.object, 'Node "x"');
        assert.equal(e.field, `metadata.annotations[${JSON.stringify(key)}]`);
        assert.match(e.reason, /want string/);
      });
    }
  }

  test('a numeric name, a null name, no metadata', () => {
    for (const name of [5, null, '', 'UPPER', 'a b', 'x'.repeat(300)]) {
      const n = node('x', good) as { metadata: { name: unknown } };
      n.metadata.name = name;
      const e = onlyError(parseNode(n));
      assert.equal(e.field, 'metadata.name');
    }
    assert.equal(onlyError(parseNode({ kind: 'Node' })).field, 'metadata');
    assert.equal(onlyError(parseNode(5)).field, '(object)');
  });

  test('a numeric or NUL location label is an error, a null location annotation is not the location "null"', () => {
    const labelled = (v: unknown) => ({
      kind: 'Node',
      metadata: { name: 'x', labels: { [`topology.kubernetes.io/region`]: v } },
    });
    assert.match(onlyError(parseNode(labelled(5))).field, /labels/);
    assert.match(onlyError(parseNode(labelled('a\u0000b'))).reason, /printable/);
    assert.match(onlyError(parseNode(withAnnotation(Annotation.location, null))).reason, /want string/);
  });

  test('podCIDR of the wrong type, catch-all or unspecified addresses', () => {
    const n = node('x', good) as { spec: Record<string, unknown> };
    n.spec['podCIDR'] = 5;
    assert.equal(onlyError(parseNode(n)).field, 'spec.podCIDR');
    assert.match(onlyError(parseNode(node('x', { ...good, podCIDR: '0.0.0.0/0' }))).reason, /catch-all/);
    assert.match(onlyError(parseNode(node('x', { ...good, internalIP: '0.0.0.0/0' }))).reason, /unspecified/);
    assert.match(onlyError(parseNode(node('x', { ...good, forceInternalIP: '::/0' }))).reason, /unspecified/);
    assert.match(onlyError(parseNode(node('x', { ...good, allowedLocationIPs: '::/0' }))).reason, /catch-all/);
  });
});

describe('wrong types in Peers', () => {
  const base = { allowedIPs: ['10.5.0.1/32'], endpoint: { dnsOrIP: { ip: '203.0.113.7' }, port: 51820 } };
  const cases: [string, unknown, string][] = [
    ['endpoint.dnsOrIP.ip: 5', { ...base, endpoint: { dnsOrIP: { ip: 5 }, port: 51820 } }, 'spec.endpoint.dnsOrIP.ip'],
    ['dns: ["x"]', { ...base, endpoint: { dnsOrIP: { dns: ['x'] }, port: 51820 } }, 'spec.endpoint.dnsOrIP.dns'],
    ['dns: 5', { ...base, endpoint: { dnsOrIP: { dns: 5 }, port: 51820 } }, 'spec.endpoint.dnsOrIP.dns'],
    [
      'dns: "1.2.3.4.5"',
      { ...base, endpoint: { dnsOrIP: { dns: '1.2.3.4.5' }, port: 1 } },
      'spec.endpoint.dnsOrIP.dns',
    ],
    ['allowedIPs: 0.0.0.0/0', { ...base, allowedIPs: ['0.0.0.0/0'] }, 'spec.allowedIPs[0]'],
    ['allowedIPs: ::/0', { ...base, allowedIPs: ['10.5.0.1/32', '::/0'] }, 'spec.allowedIPs[1]'],
    ['allowedIPs: "/024"', { ...base, allowedIPs: ['10.5.0.0/024'] }, 'spec.allowedIPs[0]'],
    ['allowedIPs: a string', { ...base, allowedIPs: '10.5.0.1/32' }, 'spec.allowedIPs'],
    ['allowedIPs: [5]', { ...base, allowedIPs: [5] }, 'spec.allowedIPs[0]'],
  ];
  for (const [name, spec, field] of cases) {
    test(name, () => {
      const p = peer('y', {}) as { spec: unknown };
      p.spec = { publicKey: wgKey('y'), ...(spec as object) };
      assert.equal(onlyError(parsePeer(p)).field, field);
    });
  }

  test('apiVersion or kind of the wrong type is an error of the list, not a crash', () => {
    const c = parseCluster([{ kind: 5 }, { kind: 'Peer', apiVersion: 5 }, 7, null, node('a', good)]);
    assert.equal(c.nodes.length, 1);
    assert.deepEqual(
      c.errors.map((e) => e.field),
      ['kind', 'apiVersion', '(object)', '(object)'],
    );
  });

  test('allowed IPs nested 50,000 deep: one short error', () => {
    let deep: unknown = '10.5.0.1/32';
    for (let i = 0; i < 50_000; i++) deep = [deep];
    const p = peer('y', {}) as { spec: unknown };
    p.spec = { publicKey: wgKey('y'), allowedIPs: [deep] };
    const e = onlyError(parsePeer(p));
    assert.equal(e.field, 'spec.allowedIPs[0]');
    assert.ok(String(e.value).length <= maxShownValue + 1);
  });
});

describe('values are cut, secrets withheld', () => {
  test('a megabyte of allowed-location IPs gives one short line', () => {
    const huge = 'x'.repeat(1 << 20);
    const e = onlyError(parseNode(withAnnotation(Annotation.allowedLocationIPs, huge)));
    assert.ok(e.message.length < 400, `${e.message.length}`);
    assert.equal(e.value, `${'x'.repeat(maxShownValue)}…`);
  });

  test('100,000 bad prefixes give a few errors, not 100,000', () => {
    const many = Array.from({ length: 100_000 }, () => 'bad').join(',');
    const p = parseNode(withAnnotation(Annotation.allowedLocationIPs, many));
    assert.equal(p.ok, false);
    if (!p.ok) assert.ok(p.errors.length <= 5);
  });

  test('a preshared key of the wrong type is withheld as well', () => {
    const p = peer('y', { allowedIPs: ['10.5.0.1/32'] }) as { spec: Record<string, unknown> };
    p.spec['presharedKey'] = { secret: 'hunter2' };
    const e = onlyError(parsePeer(p));
    assert.ok(!e.message.includes('hunter2'), e.message);
  });
});

describe('canonical forms', () => {
  test('0x1.2.3.4:1 is neither an address nor a DNS name', () => {
    assert.equal(parseEndpoint('0x1.2.3.4:1'), null);
    assert.equal(parseEndpoint('1.2.3.4.5:1'), null);
    assert.ok(parseEndpoint('vpn.example.com:51820'));
  });
  test('a prefix length with a leading zero is refused', () => {
    assert.equal(Cidr.tryParse('10.0.0.0/024'), null);
    assert.equal(Cidr.tryParse('10.0.0.0/00'), null);
    assert.ok(Cidr.tryParse('10.0.0.0/0'));
  });
});
