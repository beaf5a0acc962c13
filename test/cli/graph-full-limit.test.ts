/**
 * `kgctl graph --full` on a mesh too big to draw says so at once (a usage error naming the line
 * count) instead of building hundreds of millions of lines until it runs out of memory; below it
 * it still draws every tunnel.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Annotation } from '../../src/model/annotations.js';
import { ensureBuilt, kgctl } from './built.js';

const dir = mkdtempSync(join(tmpdir(), 'kts-graph-full-'));

/** `n` ready nodes of a cross mesh in 10 locations: a segment each. */
function snapshot(n: number): string {
  const items = Array.from({ length: n }, (_, i) => {
    const key = Buffer.alloc(32);
    key.writeUInt32BE(i + 1);
    return {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: `node-${String(i).padStart(5, '0')}`,
        annotations: {
          [Annotation.key]: key.toString('base64'),
          [Annotation.endpoint]: `100.64.${i >> 8}.${i & 0xff}:51820`,
          [Annotation.internalIP]: `172.16.${i >> 8}.${i & 0xff}/16`,
          [Annotation.location]: `loc-${i % 10}`,
          [Annotation.lastSeen]: '1764662400',
          [Annotation.granularity]: 'cross',
        },
      },
      spec: { podCIDR: `10.${42 + (i >> 8)}.${i & 0xff}.0/24` },
    };
  });
  const file = join(dir, `cluster-${n}.json`);
  writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
  return file;
}

describe('kgctl graph --full: the size it can draw', () => {
  before(ensureBuilt);
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('1,500 segments (1,124,250 lines): a usage error naming the count, no DOT', () => {
    const r = kgctl('graph', '--cluster', snapshot(1500), '--full');
    assert.equal(r.status, 1, r.stderr);
    assert.equal(r.stdout, '');
    assert.match(
      r.stderr,
      /--full: 1500 segments would be 1124250 lines .* without --full kgctl graph draws the summary/,
    );
  });

  test('100 segments (4,950 lines): drawn, every tunnel', () => {
    const r = kgctl('graph', '--cluster', snapshot(100), '--full');
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^digraph kilo \{/);
    assert.equal(r.stdout.match(/ -> /g)?.length, (100 * 99) / 2);
  });
});
