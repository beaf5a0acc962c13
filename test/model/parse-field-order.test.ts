import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Annotation } from '../../src/model/annotations.js';
import { parseNode } from '../../src/model/parse.js';
import { node } from '../helpers/cluster.js';

/**
 * A parsed node's fields keep one order whichever of the rare ones it has (parseNode builds the
 * common node without a spread, and the rare ones apart): ipv6Endpoint right after endpoint,
 * wireGuardIPv6 right after wireGuardIP, the relay fields last, as they always were.
 */
const common = [
  'name',
  'location',
  'wantsLeader',
  'endpoint',
  'internalIPs',
  'key',
  'lastSeen',
  'podCIDRs',
  'persistentKeepalive',
  'allowedLocationIPs',
  'discoveredEndpoints',
  'wireGuardIP',
  'forceWireGuardIP',
  'granularity',
  'ciliumInternalIP',
  'leaderHealth',
];

function fieldsOf(annotations: Record<string, string>): string[] {
  const p = parseNode(
    node('a', {
      location: 'eu',
      internalIP: '10.1.0.5/24',
      endpoint: '198.51.100.1:51820',
      // Of both families: on an IPv4-only node the -ipv6 annotations are not read (docs/dual-stack.md#edge-cases).
      podCIDRs: ['10.2.1.0/24', 'fd42:1::/64'],
      annotations,
    }),
  );
  assert.ok(p.ok, p.ok ? '' : p.errors.map((e) => e.message).join('\n'));
  return Object.keys(p.value);
}

const relayed = {
  [Annotation.meshFlags]: '{"port":51820}',
  [Annotation.relay]: 'true',
  [Annotation.unreachable]: 'b,c',
  [Annotation.spoke]: 'true',
};
const v6 = { [Annotation.endpointIPv6]: '[2001:db8::1]:51820' };
const wg6 = { [Annotation.wireGuardIPv6]: 'fd4b::1/64' };
const afterWireGuardIP = (fields: string[]) => {
  const at = fields.indexOf('wireGuardIP') + 1;
  return [...fields.slice(0, at), 'wireGuardIPv6', ...fields.slice(at)];
};

test('a parsed node has its fields in one order, with or without the rare ones', () => {
  assert.deepEqual(fieldsOf({}), common);
  const withV6 = [...common.slice(0, 4), 'ipv6Endpoint', ...common.slice(4)];
  assert.deepEqual(fieldsOf(v6), withV6);
  assert.deepEqual(fieldsOf(relayed), [...common, 'relay', 'unreachable', 'spoke']);
  assert.deepEqual(fieldsOf({ ...v6, ...relayed }), [...withV6, 'relay', 'unreachable', 'spoke']);
  assert.deepEqual(fieldsOf(wg6), afterWireGuardIP(common));
  assert.deepEqual(fieldsOf({ ...v6, ...wg6 }), afterWireGuardIP(withV6));
  assert.deepEqual(fieldsOf({ ...wg6, ...relayed }), [...afterWireGuardIP(common), 'relay', 'unreachable', 'spoke']);
  assert.deepEqual(fieldsOf({ ...v6, ...wg6, ...relayed }), [
    ...afterWireGuardIP(withV6),
    'relay',
    'unreachable',
    'spoke',
  ]);
});
