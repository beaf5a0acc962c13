import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { assertGolden } from '../helpers/golden.js';
import { ensureBuilt, example, kgctl } from './built.js';

before(ensureBuilt);

/**
 * `kgctl plan -o json` of a cluster of one family is a format others parse: every field, its place
 * and its value stay as they were before addresses became per family (the golden files were made by
 * that build). The firewall section is left out: it is the one part of the plan that may change.
 */
describe('kgctl plan -o json of a cluster of one family keeps its fields and values', () => {
  const cases: [string, string[]][] = [
    ['plan-office-1.json', ['office-1']],
    ['plan-aws-euw-3-location.json', ['aws-euw-3', '--mesh-granularity', 'location']],
    ['plan-gcp-use-2-subnet.json', ['gcp-use-2', '--mesh-granularity', 'subnet']],
  ];
  for (const [golden, args] of cases) {
    test(`kgctl plan ${args.join(' ')}`, () => {
      const r = kgctl('plan', ...args, '--cluster', example, '-o', 'json');
      assert.equal(r.stderr, '');
      assert.equal(r.status, 0);
      const plan = JSON.parse(r.stdout) as Record<string, unknown>;
      assert.ok('firewall' in plan);
      assert.ok(!('wireGuardIPs' in plan), 'one family adds no field');
      delete plan['firewall'];
      assertGolden(golden, `${JSON.stringify(plan, null, 2)}\n`);
    });
  }
});
