import assert from 'node:assert/strict';
import { test } from 'node:test';
import { faultTable, type FaultRecord } from '../../packages/lab/src/chaos/report.js';
import { faultKinds, schedule } from '../../packages/lab/src/chaos/schedule.js';
import { longestLoss } from '../../packages/lab/src/chaos/traffic.js';

const take = <T>(g: Generator<T>, n: number): T[] => Array.from({ length: n }, () => g.next().value as T);

test('the chaos schedule: every kind once per round, the same for the same seed, another for another', () => {
  const a = take(schedule(7), faultKinds.length * 3);
  for (let r = 0; r < 3; r++)
    assert.deepEqual(
      a
        .slice(r * faultKinds.length, (r + 1) * faultKinds.length)
        .map((f) => f.kind)
        .sort(),
      [...faultKinds].sort(),
    );
  assert.deepEqual(take(schedule(7), 20), a.slice(0, 20));
  assert.notDeepEqual(
    take(schedule(8), 20).map((f) => f.kind),
    a.slice(0, 20).map((f) => f.kind),
  );
});

test('outage is the longest run of lost pings within the window', () => {
  const s = [true, false, false, true, false, false, false, true].map((ok, i) => ({ at: 1000 + i * 500, ok }));
  assert.equal(longestLoss(s, 0, 10_000), 1500);
  assert.equal(longestLoss(s, 0, 2000), 1000, 'the window cuts the run');
  assert.equal(longestLoss([], 0, 1), 0);
});

test('the fault table: a row per kind with count, outage and recovery p50/max, violations', () => {
  const r = (kind: FaultRecord['kind'], outageMs: number, rec: number | null, v = 0): FaultRecord => ({
    kind,
    what: '',
    start: 0,
    end: 1000,
    recovered: rec === null ? null : 1000 + rec,
    outageMs,
    violations: Array.from({ length: v }, () => 'x'),
  });
  const table = faultTable(
    [r('agent-kill', 500, 1000), r('agent-kill', 1500, 3000), r('uplink-flap', 9000, null, 1)],
    [{ kind: 'leaks', violations: 0 }],
  ).split('\n');
  assert.match(table[0]!, /fault .*count .*outage p50 s .*outage max s .*recovery p50 s .*recovery max s .*violations/);
  assert.match(table[2]!, /agent-kill +\| 2 +\| 1\.5 +\| 1\.5 +\| 3\.0 +\| 3\.0 +\| 0 /);
  assert.match(table[3]!, /uplink-flap +\| 1 +\| 9\.0 +\| 9\.0 +\| - +\| - +\| 1 /);
  assert.match(table[4]!, /leaks .*\| 0 /);
});
