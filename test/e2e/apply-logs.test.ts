/**
 * Logs that do not grow with the cluster: `kg apply` of a 1,000-node cross mesh at debug level, in a
 * network namespace with wireguard-go. Every line stays under about 1 KB; info says counts and the
 * first few keys; each peer gets its line at debug only.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../../src/model/parse.js';
import { node } from '../helpers/cluster.js';
import { skipNoNetns } from '../helpers/netns.js';
import { Lab, privateInterface } from './dataplane-lab.js';

const nodes = 1000;
const locations = 10;

test(
  'kg apply at 1,000 nodes: no log line over ~1 KB, counts at info, each peer at debug',
  { skip: skipNoNetns },
  async (t) => {
    const lab = new Lab();
    t.after(() => lab.destroy());
    const self = lab.node('n-0000');
    privateInterface(self.ns, 'lan0', '192.168.0.1/24');
    const objects: KubeObject[] = Array.from({ length: nodes }, (_, i) =>
      node(`n-${String(i).padStart(4, '0')}`, {
        location: `loc-${i % locations}`,
        internalIP: `192.168.${i % locations}.${Math.floor(i / locations) + 1}/24`,
        endpoint: `198.51.${i >> 8}.${i & 255}:51820`,
        podCIDR: `10.${42 + (i >> 8)}.${i & 255}.0/24`,
        ...(i === 0 ? { key: self.publicKey } : {}),
      }),
    );
    const run = await lab.apply(self, lab.writeCluster(objects), [
      ...['--mesh-granularity', 'cross', '--encapsulate', 'never', '--log-level', 'debug'],
    ]);
    assert.equal(run.status, 0, run.stderr.slice(-2000));
    assert.deepEqual(run.errors, []);

    const lines = run.stderr.split('\n').filter(Boolean);
    const longest = Math.max(...lines.map((l) => l.length));
    assert.ok(
      longest <= 1100,
      `longest line ${longest} chars: ${lines.find((l) => l.length === longest)!.slice(0, 200)}…`,
    );

    // Cross: one WireGuard peer per node outside the own location.
    const peers = nodes - nodes / locations;
    const wireGuard = run.applied!.wireGuard as { added: string[]; counts?: { added: number } };
    assert.equal(wireGuard.counts?.added, peers);
    assert.ok(wireGuard.added.length <= 5, `${wireGuard.added.length} keys on the applied line`);
    const info = run.logs.filter((l) => l.level === 30);
    assert.ok(info.length < 20, `${info.length} info lines`);
    const perPeer = run.logs.filter((l) => l.level === 20 && l.msg.startsWith('wireguard kilo0: add peer'));
    assert.ok(perPeer.length >= peers - 5, `${perPeer.length} per-peer debug lines for ${peers} peers`);
  },
);
