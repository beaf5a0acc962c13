/**
 * Path health is told of each new topology after the pass's write (agent.ts): a join waits for the
 * write, not for path health to judge every target again (19,000 at 20,000 nodes), and it is still
 * told of every topology, so a joined node's pairs are judged and a left one's forgotten.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PathHealth } from '../../src/agent/path-health.js';
import { Prober } from '../../src/agent/health-prober.js';
import type { Topology } from '../../src/mesh/topology.js';
import type { WireGuardState } from '../../src/wireguard/state.js';
import { node, wgKey } from '../helpers/cluster.js';
import { eventually, settled, startHarness } from './agent-harness.js';

/** Path health that notes, at each topology it is told of, the nodes in it and the peers already written. */
class Recording extends PathHealth {
  readonly told: { nodes: string[]; written: Promise<string[]> }[] = [];
  constructor(private readonly written: () => Promise<WireGuardState>) {
    super({
      prober: new Prober(() => Promise.resolve(true)),
      mesh: { encapsulate: 'never', local: true },
      log: { warn: () => {}, info: () => {} },
    });
  }
  override planned(t: Topology, device: WireGuardState | null): void {
    const last = this.told.at(-1);
    const nodes = t.segments.flatMap((s) => s.nodes.map((n) => n.name)).sort();
    // The fake device's read copies its state when called: what the write had left at this moment.
    if (last?.nodes.join() !== nodes.join())
      this.told.push({ nodes, written: this.written().then((s) => s.peers.map((p) => p.publicKey)) });
    super.planned(t, device);
  }
}

test('path health is told of a joined and a left node, after the pass wrote them', async (t) => {
  let device: (() => Promise<WireGuardState>) | null = null;
  const paths = new Recording(() => device!());
  const h = await startHarness(t, { deps: { paths }, start: false });
  device = () => h.device.read();
  await h.agent.start();
  await eventually('path health knows the seeded nodes', () => paths.told.at(-1)?.nodes.join() === 'a,b,c');
  await settled(h);
  const before = paths.summary().pairs;

  h.api.addNode(
    node('d', { location: 'sa', endpoint: '203.0.113.9:51820', internalIP: '192.168.5.9/24', podCIDR: '10.42.5.0/24' }),
  );
  await eventually('path health knows d', () => paths.told.at(-1)?.nodes.includes('d') === true);
  assert.ok(
    (await paths.told.at(-1)!.written).includes(wgKey('d')),
    "path health was told of d before d's peer was written",
  );
  const joined = paths.summary().pairs;
  assert.equal(joined.ok + joined.unknown, before.ok + before.unknown + 1, "d's WireGuard pair is planned");

  h.api.deleteNode('d');
  await eventually('path health forgot d', () => paths.told.at(-1)?.nodes.includes('d') === false);
  assert.ok(
    !(await paths.told.at(-1)!.written).includes(wgKey('d')),
    "path health was told d left before d's peer was removed",
  );
  assert.deepEqual(paths.summary().pairs, before);
});
