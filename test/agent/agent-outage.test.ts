/**
 * The agent after an API server outage: check-ins resume one node at a time (each on its own
 * tick), and a node that has not had its turn yet must stay in the mesh meanwhile — it is 60 s
 * and more behind by then only because nobody could check in. One that does not come back drops.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Annotation } from '../../src/model/annotations.js';
import { resumeGraceSeconds } from '../../src/model/ready.js';
import { wgKey } from '../helpers/cluster.js';
import { seesCheckIn, settled, startHarness } from './agent-harness.js';

describe('agent: check-ins resuming after an API server outage', () => {
  test('keeps a node that has not checked in again yet; drops it if it has not within the grace', async (t) => {
    const h = await startHarness(t);
    await settled(h);
    assert.ok((await h.peerKeys()).includes(wgKey('c')));
    const routes = h.kernel.routes.length;

    await h.api.stop();
    for (let i = 0; i < 3; i++) {
      h.clock.ms += 30_000;
      await h.agent.reconcileOnce();
    }
    // Back after 90 s: b checks in on its tick, c's tick is still to come.
    const back = Math.floor(h.clock.ms / 1000);
    h.api.patchNode('b', { metadata: { annotations: { [Annotation.lastSeen]: String(back) } } });
    await h.api.restart();
    await seesCheckIn(h, 'b', back);
    await h.agent.reconcileOnce();
    await seesCheckIn(h, 'a', back, 'the agent checked in again');
    // Until the grace is over, the agent's and b's ticks go on every 30 s; c does not check in.
    const checkIn = async (name: string, at: number) => {
      h.api.patchNode(name, { metadata: { annotations: { [Annotation.lastSeen]: String(at) } } });
      await seesCheckIn(h, name, at);
    };
    for (let s = 10; s < resumeGraceSeconds; s += 10) {
      h.clock.ms += 10_000;
      if (s % 30 === 0) await checkIn('b', back + s);
      await h.agent.reconcileOnce();
      assert.ok((await h.peerKeys()).includes(wgKey('c')), `c dropped ${s} s after check-ins resumed, before its turn`);
    }
    await settled(h);
    assert.equal(h.kernel.routes.length, routes, 'routes changed while check-ins resumed');

    // c never checks in: once the grace is over it is not ready, as any node 60 s silent.
    h.clock.ms += 10_000;
    await checkIn('b', Math.floor(h.clock.ms / 1000));
    await h.agent.reconcileOnce();
    assert.ok(!(await h.peerKeys()).includes(wgKey('c')), 'c kept although it never checked in again');
  });
});
