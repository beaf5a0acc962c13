import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { logDetails, summarizePeerChanges } from '../../src/dataplane/log-summary.js';
import { wgKey } from '../helpers/cluster.js';

const keys = (n: number, p: string) => Array.from({ length: n }, (_, i) => wgKey(`${p}${i}`));

describe('log lines do not grow with the cluster', () => {
  test('a few peer changes are logged whole, thousands as the first few and counts', () => {
    const few = { added: keys(2, 'a'), removed: keys(1, 'r'), updated: [] };
    assert.deepEqual(summarizePeerChanges(few), few);
    const many = summarizePeerChanges({ added: keys(5000, 'a'), removed: keys(3, 'r'), updated: [] });
    assert.deepEqual(many.counts, { added: 5000, removed: 3, updated: 0 });
    assert.equal(many.added.length, 5);
    assert.ok(JSON.stringify(many).length < 1000, `${JSON.stringify(many).length} chars`);
  });

  test('per-peer lines past the first few go to debug, each cut to about 1 KB', () => {
    const info: string[] = [];
    const debug: string[] = [];
    const lines = [`wireguard kilo0: add peer k allowed-ips ${'10.0.0.0/24,'.repeat(500)}`, ...keys(99, 'x')];
    logDetails(
      'wireguard kilo0',
      lines,
      (l) => info.push(l),
      (l) => debug.push(l),
    );
    assert.equal(info.length, 4);
    assert.match(info[3]!, /^wireguard kilo0: and 97 more changes/);
    assert.equal(debug.length, 97);
    assert.ok([...info, ...debug].every((l) => l.length < 1100));
    const small: string[] = [];
    logDetails('w', ['a', 'b', 'c', 'd'], (l) => small.push(l), undefined);
    assert.deepEqual(small, ['a', 'b', 'c', 'd']);
  });
});
