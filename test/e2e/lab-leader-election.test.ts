/**
 * --leader-election=lease in the lab: 2 locations × 3 nodes, location granularity. A pod of
 * location 1 pings a pod of location 2 ten times a second while location 2's leader is broken
 * four ways (agent SIGKILLed, uplink down, ip_forward off, FORWARD DROP — the leader stays up,
 * reachable and handshaking: only its followers' relay probes tell); each time another member takes the
 * Lease and the pings come back. The outages are reported, not asserted (bench/failover.ts
 * measures five runs of each). About 4 minutes on 2 idle cores.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { faults, leaseHolder, measureFailover, plannedLeader, repair } from '../../packages/lab/src/failover.js';
import { sleep } from '../../packages/lab/src/sh.js';
import { eventually, skipLab, upLab } from './lab-helpers.js';

describe('lab: location leaders elected by Lease fail over', { skip: skipLab, timeout: 900_000 }, () => {
  test('kill, uplink down, forwarding off, FORWARD DROP: a follower takes over; a recovered old leader takes nothing back', async (t) => {
    const lab = await upLab(t, {
      locations: 2,
      nodesPerLocation: 3,
      granularity: 'location',
      natLocation: null,
      peer: false,
    });
    await lab.restartAgents('location', ['--leader-election=lease']);
    await lab.converge(180_000);
    await eventually(
      'location 2 has a Lease holder that leads',
      async () => {
        const holder = await leaseHolder(lab, 2);
        return holder !== null && plannedLeader(lab, 2) === holder;
      },
      60_000,
    );

    for (const fault of faults) {
      const r = await measureFailover(lab, fault, { victim: 2, from: 1, timeoutMs: 60_000 });
      t.diagnostic(`${fault}: ${r.oldLeader} → ${r.newLeader}, outage ${r.outageMs} ms`);
      assert.ok(r.recovered, `${fault}: pings did not come back within 60 s (${JSON.stringify(r)})`);
      assert.notEqual(r.newLeader, r.oldLeader);
      assert.equal(await leaseHolder(lab, 2), r.newLeader, `${fault}: the Lease holder is the node that leads`);

      // The old leader comes back: it must not take the Lease back (no flapping).
      repair(lab, r.oldLeader, fault);
      const metricsOf = (node: string) =>
        /kilo_leader_transitions_total\{location="loc2"\} (\d+)/.exec(lab.agentGet(node, '/metrics').body)?.[1] ?? '0';
      const others = lab.nodes.filter((n) => n.name !== r.oldLeader).map((n) => n.name);
      const before = others.map(metricsOf);
      // Past a whole Lease duration and the old leader's probe hysteresis.
      await sleep(12_000);
      assert.equal(await leaseHolder(lab, 2), r.newLeader, `${fault}: the Lease moved after the old leader recovered`);
      assert.deepEqual(others.map(metricsOf), before, `${fault}: leader transitions after the old leader recovered`);
      await lab.converge(120_000);
    }
  });
});
