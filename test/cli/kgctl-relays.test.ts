import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Plan } from '../../src/mesh/types.js';
import { Annotation } from '../../src/model/annotations.js';
import { node } from '../helpers/cluster.js';
import { ensureBuilt, kgctl } from './built.js';

before(ensureBuilt);

/** eu-0 cannot reach us-0 (its annotation): ap-0, the only node of a third location, relays them. */
const dir = mkdtempSync(join(tmpdir(), 'kts-kgctl-relays-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const file = join(dir, 'cluster.json');
const names = [
  ['eu-0', 'eu'],
  ['eu-1', 'eu'],
  ['us-0', 'us'],
  ['ap-0', 'ap'],
] as const;
writeFileSync(
  file,
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'List',
    items: names.map(([name, location], i) =>
      node(name, {
        location,
        lastSeen: Math.floor(Date.now() / 1000),
        internalIP: `10.1.${i + 1}.1/24`,
        endpoint: `198.51.100.${i + 1}:51820`,
        podCIDR: `10.2.${i + 1}.0/24`,
        granularity: 'cross',
        annotations: {
          [Annotation.meshFlags]: '{"port":51820}',
          ...(name === 'eu-0' ? { [Annotation.unreachable]: 'us-0' } : {}),
        },
      }),
    ),
  }),
);

describe('kgctl shows relayed pairs', () => {
  test('kgctl plan -o text heads the ends’ and the relay’s plans with the pair, and only theirs', () => {
    const plan = (n: string) => kgctl('plan', n, '--cluster', file, '--mesh-granularity', 'cross', '-o', 'text');
    const end = plan('eu-0');
    assert.equal(end.status, 0, end.stderr);
    assert.match(end.stdout, /^# relayed pairs .*\n#   eu-0 <-> us-0: through ap-0$/m);
    assert.match(plan('ap-0').stdout, /#   eu-0 <-> us-0: through this node/);
    assert.doesNotMatch(plan('eu-1').stdout, /relayed/);
  });

  test('kgctl plan -o json lists the pair, and the end’s allowed IPs moved to the relay’s entry', () => {
    const r = kgctl('plan', 'us-0', '--cluster', file, '--mesh-granularity', 'cross', '-o', 'json');
    assert.equal(r.status, 0, r.stderr);
    const plan = JSON.parse(r.stdout) as Plan;
    assert.deepEqual(plan.relays, [{ pair: ['eu-0', 'us-0'], via: 'ap-0' }]);
    const relay = plan.peers.find((p) => p.kind === 'segment' && p.names.includes('ap-0'))!;
    assert.ok(relay.allowedIPs.includes('10.2.1.0/24'), relay.allowedIPs.join(' '));
  });

  test('kgctl graph draws the pair through its relay, as the full graph does at this size', () => {
    const full = kgctl('graph', '--cluster', file, '--mesh-granularity', 'cross');
    assert.equal(full.status, 0, full.stderr);
    assert.match(
      full.stdout,
      /"node\/eu-0" -> "node\/us-0" \[style=dotted, color="#c0392b", label="relayed through ap-0"/,
    );
  });
});
