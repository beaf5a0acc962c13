/**
 * The chaos run, short: the lab (3 locations × 2 nodes, one location behind NAT, a Peer)
 * through one round of five faults — agent SIGKILL and restart with --clean-up=false, the API
 * server away (15 s here, 60 s in the long run) and restarted on its state file, a Kilo route and
 * a Kilo iptables rule deleted by hand — with the long run's invariants: every pair reachable
 * within each fault's window, nothing stale in quiet time, nothing changed while the API server
 * is away, no leaks. `npm run chaos` is the long version (docs/chaos.md). About 2 minutes on 2
 * idle cores.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runChaos } from '../../packages/lab/src/chaos/run.js';
import type { FaultKind } from '../../packages/lab/src/chaos/schedule.js';
import { ensureBuilt } from '../cli/built.js';
import { skipLab } from './lab-helpers.js';

const kinds: FaultKind[] = [
  'agent-kill',
  'apiserver-away',
  'apiserver-restart',
  'route-deleted',
  'iptables-rule-deleted',
];

describe('lab: chaos, one short round', { skip: skipLab, timeout: 900_000 }, () => {
  test('every pair reachable after each fault, nothing stale, nothing changed while the API server is away', async () => {
    ensureBuilt();
    const id = `${process.pid % 10000}`;
    const r = await runChaos({
      minutes: 10,
      maxFaults: kinds.length,
      seed: 17,
      apiAwaySeconds: 15,
      stateDir: `/tmp/kilo-chaos-e2e-${id}`,
      prefix: `kce${id}-`,
      kinds,
      log: (l) => console.log(l),
    });
    console.log(r.table);
    const violations = [...r.records.flatMap((x) => x.violations), ...r.other.flatMap((o) => o.violations)];
    assert.deepEqual(violations, []);
    assert.deepEqual(r.records.map((x) => x.kind).sort(), [...kinds].sort(), 'each kind once');
    assert.ok(r.pings.sent > 0, 'traffic ran');
  });
});
