import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Command } from 'commander';
import { addMeshFlags, meshOptionsFrom, type MeshFlagValues } from '../../src/cli/flags.js';
import { formatMeshFlags, parseMeshFlags, type MeshFlags } from '../../src/model/mesh-flags.js';
import { UsageError } from '../../src/model/errors.js';
import { Cidr } from '../../src/net/cidr.js';

function parse(...args: string[]): MeshFlagValues {
  const cmd = addMeshFlags(new Command('x'), { allowAuto: false }).exitOverride();
  cmd.parse(args, { from: 'user' });
  return cmd.opts<MeshFlagValues>();
}

test('--subnet of one family is a Cidr and gives options as before (no subnets)', () => {
  const o = meshOptionsFrom(parse('--subnet', '10.9.0.0/16'), 'location');
  assert.equal(o.subnet.networkText, '10.9.0.0/16');
  assert.ok(!('subnets' in o));
});

test('--subnet 10.4.0.0/16,fd4b::/64: one per family, IPv4 first whatever the order', () => {
  const o = meshOptionsFrom(parse('--subnet', 'fd4b::/64,10.4.0.0/16'), 'location');
  assert.equal(o.subnet.networkText, '10.4.0.0/16');
  assert.deepEqual(
    o.subnets?.map((c) => c.networkText),
    ['10.4.0.0/16', 'fd4b::/64'],
  );
});

test('--subnet: two of one family, three, or an IPv6 one smaller than the IPv4 one: a usage error naming it', () => {
  assert.throws(
    () => parse('--subnet', '10.4.0.0/16,10.5.0.0/16'),
    (e: Error) => e instanceof UsageError && /--subnet: two CIDRs of one family/.test(e.message),
  );
  assert.throws(() => parse('--subnet', '10.4.0.0/16,fd4b::/64,fd4c::/64'), /at most one CIDR per family/);
  assert.throws(
    () => parse('--subnet', '10.4.0.0/16,fd4b::/120'),
    (e: Error) => /--subnet: fd4b::\/120 holds fewer addresses than 10\.4\.0\.0\/16.*\/112/.test(e.message),
  );
  assert.doesNotThrow(() => parse('--subnet', '10.4.0.0/16,fd4b::/112'));
});

test('--service-cidr takes one per family, and stays repeatable', () => {
  const o = meshOptionsFrom(
    parse('--service-cidr', '10.96.0.0/12,fd96::/108', '--service-cidr', '10.200.0.0/16'),
    'location',
  );
  assert.deepEqual(
    o.serviceCIDRs.map((c) => c.networkText),
    ['10.96.0.0/12', 'fd96::/108', '10.200.0.0/16'],
  );
});

/** What an agent with kg's defaults and this --subnet announces. */
const flags = (subnet: MeshFlags['subnet']): MeshFlags => ({
  ...parse(),
  subnet,
  routeHostTraffic: false,
  compatibility: '',
  leaderElection: 'annotation',
  namespace: 'kube-system',
});

test('mesh-flags: one family announces what it did; two add "subnets", which read back', () => {
  const one = formatMeshFlags(flags(Cidr.parse('10.4.0.0/16')));
  assert.ok(one.startsWith('{"subnet":"10.4.0.0/16","port":51820,'), one);
  assert.ok(!one.includes('subnets'));
  const two = formatMeshFlags(flags([Cidr.parse('10.4.0.0/16'), Cidr.parse('fd4b::/64')]));
  assert.ok(two.startsWith('{"subnet":"10.4.0.0/16","subnets":["10.4.0.0/16","fd4b::/64"],'), two);
  const back = parseMeshFlags(two, 'Node "a"');
  assert.ok(!(back instanceof Error));
  assert.deepEqual((back.subnet as Cidr[]).map(String), ['10.4.0.0/16', 'fd4b::/64']);
  const bad = parseMeshFlags('{"subnets":["10.4.0.0/16","10.5.0.0/16"]}', 'Node "a"');
  assert.ok(bad instanceof Error && /subnets.*one per family/.test(bad.message), JSON.stringify(bad));
  // An IPv6 subnet smaller than the IPv4 one cannot hold every segment's slot: the flag's rule,
  // naming the node, the field and the value (kgctl ignores that node's announcement, not the node).
  const small = parseMeshFlags('{"subnets":["10.4.0.0/16","fd4b::/120"]}', 'Node "a"');
  assert.ok(small instanceof Error, JSON.stringify(small));
  for (const part of ['Node "a"', 'mesh-flags"].subnets', '"fd4b::/120"', '/112 or shorter'])
    assert.ok(small.message.includes(part), `${part} in ${small.message}`);
});
