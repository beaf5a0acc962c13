/**
 * `kgctl status` from a snapshot: per node, and the planned pairs that do not work with their
 * reasons, computed from published data (a location mistake) or as an agent reports them
 * (kilo.squat.ai/path-health).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { formatPathHealth } from '../../src/agent/health-summary.js';
import { Annotation } from '../../src/model/annotations.js';
import { node } from '../helpers/cluster.js';
import { ensureBuilt, kgctl } from './built.js';

function snapshot(n2Location: string, report?: string): string {
  const spec = (loc: string, i: number, site: number) => ({
    location: loc,
    internalIP: `192.168.${site}.${10 + i}/24`,
    endpoint: `198.18.${site}.${10 + i}:51820`,
    podCIDR: `10.42.${site * 2 + i}.0/24`,
    granularity: 'cross',
  });
  const health = (failing: { node: string; path: 'private' | 'wireguard'; reason: string }[]) =>
    formatPathHealth({
      pairs: { ok: 2, failing: failing.length, unknown: 0 },
      handshakes: { recent: 2, stale: 0, never: 1 },
      failing,
      more: 0,
    });
  const nodes = [
    node('loc1-n1', {
      ...spec('loc1', 1, 1),
      annotations: {
        [Annotation.pathHealth]: health(report ? [{ node: 'loc2-n2', path: 'wireguard', reason: report }] : []),
      },
    }),
    node('loc1-n2', spec(n2Location, 2, 1)),
    node('loc2-n1', spec('loc2', 1, 2)),
    node('loc2-n2', spec('loc2', 2, 2)),
  ];
  return JSON.stringify({ apiVersion: 'v1', kind: 'List', items: nodes });
}

test('kgctl status names the pairs of a location mistake and what agents report, in text and JSON', (t) => {
  ensureBuilt();
  const dir = mkdtempSync(join(tmpdir(), 'kgctl-status-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'c.json');
  writeFileSync(file, snapshot('loc2', 'no answer'));
  const text = kgctl('status', '--cluster', file, '--encapsulate', 'never');
  assert.equal(text.status, 0, text.stderr);
  assert.match(text.stdout, /^granularity cross; 4 of 4 nodes ready$/m);
  assert.match(
    text.stdout,
    /^loc1-n1 +loc1 +yes +yes +198\.18\.1\.11:51820 +2 recent, 0 stale, 1 never +2 ok, 1 failing, 0 unknown$/m,
  );
  assert.match(text.stdout, /^loc1-n2 +loc2 +yes +yes +198\.18\.1\.12:51820 +- +-$/m);
  assert.match(text.stdout, /^planned but not working: 3 pairs$/m);
  assert.match(
    text.stdout,
    /^ {2}loc1-n2 ↔ loc2-n1 \(private\): loc1-n2's internal IP 192\.168\.1\.12\/24 is not on loc2-n1's network 192\.168\.2\.0\/24: same location loc2, different LANs \(use subnet granularity, or fix the location\)$/m,
  );
  assert.match(text.stdout, /^ {2}loc1-n1 → loc2-n2 \(wireguard\): loc1-n1 reports: no answer$/m);

  const json = kgctl('status', '--cluster', file, '--encapsulate', 'never', '-o', 'json');
  assert.equal(json.status, 0, json.stderr);
  const s = JSON.parse(json.stdout) as { brokenTotal: number; broken: { from: string; to: string; source: string }[] };
  assert.equal(s.brokenTotal, 3);
  assert.deepEqual(
    s.broken.map((b) => `${b.from} ${b.to} ${b.source}`),
    ['loc1-n2 loc2-n1 published', 'loc1-n2 loc2-n2 published', 'loc1-n1 loc2-n2 probe'],
  );

  // With IPIP (kgctl's default, --encapsulate=always) mates on routed subnets reach each other:
  // no mistake to compute, only what the agent reports.
  const ipip = kgctl('status', '--cluster', file);
  assert.match(ipip.stdout, /^planned but not working: 1 pair$/m, ipip.stdout);

  writeFileSync(file, snapshot('loc1'));
  const fixed = kgctl('status', '--cluster', file, '--encapsulate', 'never');
  assert.equal(fixed.status, 0, fixed.stderr);
  assert.match(fixed.stdout, /^every planned pair works, as far as the agents have probed$/m);
});
