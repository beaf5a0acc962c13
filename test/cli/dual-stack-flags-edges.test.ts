/**
 * --subnet and --service-cidr given two CIDRs of one family, or IPv6 first (docs/dual-stack.md#edge-cases):
 * the first is a usage error naming the flag and the value; the order is free (IPv4's first after).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Command } from 'commander';
import { addMeshFlags, meshOptionsFrom, type MeshFlagValues } from '../../src/cli/flags.js';
import { UsageError } from '../../src/model/errors.js';

function parse(...args: string[]): MeshFlagValues {
  const cmd = addMeshFlags(new Command('x'), { allowAuto: false }).exitOverride();
  cmd.parse(args, { from: 'user' });
  return cmd.opts<MeshFlagValues>();
}

test('two CIDRs of one family: a usage error naming the flag and the value, for either flag and family', () => {
  for (const flag of ['--subnet', '--service-cidr'])
    for (const value of ['10.4.0.0/16,10.5.0.0/16', 'fd4b::/64,fd4c::/64']) {
      assert.throws(
        () => parse(flag, value),
        (e: Error) =>
          e instanceof UsageError && e.message.includes(`${flag}:`) && e.message.includes(JSON.stringify(value)),
        `${flag} ${value}`,
      );
    }
});

test('IPv6 first is no error: both flags keep IPv4 first', () => {
  const o = meshOptionsFrom(
    parse('--subnet', 'fd4b::/64,10.4.0.0/16', '--service-cidr', 'fd96::/108,10.96.0.0/12'),
    'full',
  );
  assert.deepEqual(
    o.subnets?.map((c) => c.networkText),
    ['10.4.0.0/16', 'fd4b::/64'],
  );
  assert.deepEqual(
    o.serviceCIDRs.map((c) => c.networkText),
    ['10.96.0.0/12', 'fd96::/108'],
  );
});
