/**
 * Readiness as a running observer judges it (an agent's passes, kgctl connect, the chaos checker):
 * a cluster that goes silent (the API server away) and resumes must not lose the nodes that have
 * not yet had their turn to check in again; a node that does not check in again still drops out.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  isNodeReady,
  judgeReadiness,
  readinessTime,
  rememberCheckIn,
  resumeGraceSeconds,
  silenceSeconds,
  type ReadinessMemory,
} from '../../src/model/ready.js';
import type { KiloNode } from '../../src/model/types.js';
import { kiloNode, NOW } from '../helpers/cluster.js';

const names = ['a', 'b', 'c', 'd', 'e', 'f'];

/**
 * Six nodes checking in every 30 s, 5 s apart, from NOW - 300; nobody checks in during
 * [silentFrom, silentTo); `dead` never checks in after `diesAt`. Judged every second: the names
 * ready at each second.
 */
function run(o: { silentFrom?: number; silentTo?: number; dead?: string; diesAt?: number; until: number }) {
  const lastSeen = new Map<string, number>();
  let memory: ReadinessMemory | null = null;
  const readyAt = new Map<number, Set<string>>();
  const tick = new Map<string, number>(names.map((n, i) => [n, NOW - 300 + i * 5]));
  for (let now = NOW - 300; now <= o.until; now++) {
    const silent = o.silentFrom !== undefined && now >= o.silentFrom && now < o.silentTo!;
    for (const n of names) {
      if (tick.get(n)! > now) continue;
      tick.set(n, tick.get(n)! + 30);
      if (silent || (n === o.dead && now >= o.diesAt!)) continue;
      lastSeen.set(n, now);
    }
    const nodes: KiloNode[] = names
      .filter((n) => lastSeen.has(n))
      .map((n) => kiloNode(n, { endpoint: '198.51.100.1:51820', podCIDR: '10.2.1.0/24', lastSeen: lastSeen.get(n)! }));
    const judged = judgeReadiness(memory, nodes, now);
    memory = judged.memory;
    readyAt.set(now, new Set(nodes.filter((n) => isNodeReady(n, judged.at)).map((n) => n.name)));
  }
  return readyAt;
}

const everyone = (r: Map<number, Set<string>>, from: number, to: number) => {
  for (let t = from; t <= to; t++)
    assert.deepEqual([...r.get(t)!].sort(), names, `at NOW${t - NOW >= 0 ? '+' : ''}${t - NOW}`);
};

describe('readiness across a silence (judgeReadiness)', () => {
  test('the API server away 67 s: every node stays ready during the silence and while check-ins resume', () => {
    const r = run({ silentFrom: NOW, silentTo: NOW + 67, until: NOW + 200 });
    everyone(r, NOW - 200, NOW + 200);
  });

  test('without the memory, the first check-in after the silence drops every node still to check in', () => {
    // What an observer judging at readinessTime alone (the agent before) saw: the bug this fixes.
    const nodes = [
      kiloNode('a', { endpoint: '198.51.100.1:51820', podCIDR: '10.2.1.0/24', lastSeen: NOW + 68 }),
      ...names
        .slice(1)
        .map((n, i) =>
          kiloNode(n, { endpoint: '198.51.100.1:51820', podCIDR: '10.2.1.0/24', lastSeen: NOW - 25 + i * 5 }),
        ),
    ];
    const at = readinessTime(nodes, NOW + 68);
    assert.deepEqual(
      nodes.filter((n) => isNodeReady(n, at)).map((n) => n.name),
      ['a'],
    );
    const memory: ReadinessMemory = { newest: NOW, held: null };
    const judged = judgeReadiness(memory, nodes, NOW + 68);
    assert.deepEqual(
      nodes.filter((n) => isNodeReady(n, judged.at)).map((n) => n.name),
      names,
    );
  });

  test('a node that does not check in after the silence drops out when the grace ends', () => {
    const r = run({ silentFrom: NOW, silentTo: NOW + 67, dead: 'f', diesAt: NOW, until: NOW + 200 });
    // a checks in first after the silence, at NOW+70 (its tick): the grace runs from there.
    const end = NOW + 70 + resumeGraceSeconds;
    assert.ok(r.get(end - 1)!.has('f'), 'f dropped before the others had their turn');
    assert.ok(!r.get(end)!.has('f'), 'f kept after the grace');
    for (let t = end; t <= NOW + 200; t++) assert.equal(r.get(t)!.size, 5);
  });

  test('no silence: a dead node drops 60 s after its last check-in, as readinessTime says', () => {
    const r = run({ dead: 'c', diesAt: NOW, until: NOW + 200 });
    // c last checked in at NOW - 20 (its ticks: NOW - 300 + 10 + 30k).
    assert.ok(r.get(NOW + 40)!.has('c'));
    assert.ok(!r.get(NOW + 41)!.has('c'));
    everyone(r, NOW - 200, NOW + 40);
  });

  test('rememberCheckIn: a check-in a silence after the newest holds readiness where it froze', () => {
    let m = rememberCheckIn(null, NOW);
    assert.deepEqual(m, { newest: NOW, held: null });
    m = rememberCheckIn(m, NOW + silenceSeconds);
    assert.deepEqual(m, { newest: NOW + silenceSeconds, held: null }, 'a late tick is no silence');
    m = rememberCheckIn(m, NOW + 10);
    assert.deepEqual(m, { newest: NOW + silenceSeconds, held: null }, 'an older check-in changes nothing');
    const t = NOW + silenceSeconds;
    m = rememberCheckIn(m, t + 100);
    assert.deepEqual(m, { newest: t + 100, held: { at: t + 30, until: t + 100 + resumeGraceSeconds } });
    // Another silence within the grace holds readiness where that one froze it: a lone agent
    // whose every tick lands late must not keep a dead node ready for ever.
    m = rememberCheckIn(m, t + 150);
    assert.deepEqual(m.held, { at: t + 130, until: t + 150 + resumeGraceSeconds });
  });
});
