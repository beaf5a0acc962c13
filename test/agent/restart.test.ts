/**
 * An agent restarted on a node that kept its dataplane (kg SIGKILLed, or stopped with
 * --clean-up=false): it must not write before it has read the whole cluster. A pass planned from
 * the Nodes alone removes every Peer from the device and adds it back a moment later; the Peer's
 * own WireGuard then keeps sending on the session the node forgot, and nothing answers for the 15 s
 * WireGuard waits before it gives a session up (the lab's chaos run saw exactly that).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubernetesSource } from '../../src/backend/kubernetes/source.js';
import type { ChangeListener, ClusterSource } from '../../src/backend/source.js';
import type { KubeObject } from '../../src/model/parse.js';
import { wgKey } from '../helpers/cluster.js';
import { settled, startHarness, waitUntil } from './agent-harness.js';

/** The Kubernetes source with its Peers listed late: the Nodes are read, the Peers not yet. */
class PeersListedLate implements ClusterSource {
  private open = false;
  private release: () => void = () => {};
  private readonly gate = new Promise<void>((resolve) => (this.release = resolve));
  /** When the inner source has read the Nodes (and told the listeners). */
  nodesRead = false;

  constructor(private readonly inner: KubernetesSource) {}

  async start(): Promise<void> {
    await this.inner.start();
    this.nodesRead = true;
    await this.gate;
  }

  listPeers(): void {
    this.open = true;
    this.release();
  }

  stop(): Promise<void> {
    this.release();
    return this.inner.stop();
  }

  objects(): KubeObject[] {
    const all = this.inner.objects();
    return this.open ? all : all.filter((o) => o.kind !== 'Peer');
  }

  onChange(listener: ChangeListener): void {
    this.inner.onChange(listener);
  }

  synced(): boolean {
    return this.open && this.inner.synced();
  }

  lastSync(): number {
    return this.inner.lastSync();
  }

  patchNodeAnnotations(name: string, annotations: Record<string, string | null>): Promise<void> {
    return this.inner.patchNodeAnnotations(name, annotations);
  }
}

describe('agent restarted on a node that kept its dataplane', () => {
  test('writes nothing until every resource is read: no Peer is removed and added back', async (t) => {
    const first = await startHarness(t, { agent: { cleanUp: false } });
    await settled(first);
    const laptop = wgKey('laptop');
    assert.ok((await first.peerKeys()).includes(laptop), 'the Peer is on the device before the restart');
    await first.agent.stop();
    const written = first.device.history.length;

    let late: PeersListedLate | null = null;
    const second = await startHarness(t, {
      restartOf: first,
      agent: { cleanUp: false },
      start: false,
      wrapSource: (s) => (late = new PeersListedLate(s)),
    });
    const started = second.agent.start();
    try {
      await waitUntil('the restarted agent read the Nodes', () => late!.nodesRead, 10_000);
      // Many coalescing windows (30 ms here) with the Nodes read and the Peers not.
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(first.device.history.slice(written), [], 'nothing written before the Peers were read');
    } finally {
      // Started whatever happened, so that the harness stops it for good.
      late!.listPeers();
      await started;
    }
    await waitUntil('the restarted agent planned', () => second.agent.status.plan !== null, 10_000);
    await settled(second);
    const removals = first.device.history.slice(written).filter((l) => l.includes('remove peer'));
    assert.deepEqual(removals, [], 'no peer removed by the restart');
    assert.ok((await second.peerKeys()).includes(laptop));
  });
});
