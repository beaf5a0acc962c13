import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ElectedLeaders } from '../../src/mesh/leaders.js';
import {
  RelayReporter,
  RelayVerdict,
  formatLeaderHealth,
  forwardingComplaints,
  forwardingDenied,
  relayTargets,
  relayTerm,
} from '../../src/election/relay.js';
import { topologyOf } from '../../src/mesh/compute.js';
import { Annotation } from '../../src/model/annotations.js';
import { parseNode } from '../../src/model/parse.js';
import type { KiloNode } from '../../src/model/types.js';
import { NOW, kiloNode, meshOptions, node, parsed } from '../helpers/cluster.js';

const term = Date.UTC(2026, 11, 2, 22, 40, 0, 123);

function member(name: string, i: number, location = 'eu', report?: { leader: string; term: number }): KiloNode {
  return kiloNode(name, {
    location,
    internalIP: `10.0.${location === 'eu' ? 0 : 1}.${i}/24`,
    endpoint: `198.51.100.${i}:51820`,
    podCIDR: `10.42.${i}.0/24`,
    ...(report ? { annotations: { [Annotation.leaderHealth]: formatLeaderHealth(report) } } : {}),
  });
}

function objects(count: number) {
  const out = [];
  for (let i = 1; i <= count; i++)
    out.push(
      node(`eu-${i}`, {
        location: 'eu',
        internalIP: `10.0.0.${i}/24`,
        endpoint: `198.51.100.${i}:51820`,
        podCIDR: `10.42.${i}.0/24`,
      }),
    );
  for (let l = 1; l <= 5; l++)
    out.push(
      node(`far-${l}`, {
        location: `far${l}`,
        internalIP: `10.1.${l}.1/24`,
        endpoint: `203.0.113.${l}:51820`,
        podCIDR: `10.43.${l}.0/24`,
      }),
    );
  return out;
}

const leases: ElectedLeaders = new Map([['eu', { node: 'eu-1', reason: 'lease' as const }]]);

describe('relay probes: followers test their leader’s FORWARD path', () => {
  test('the report round-trips through the annotation; a malformed one is an error naming it', () => {
    const n = member('eu-2', 2, 'eu', { leader: 'eu-1', term });
    assert.deepEqual(n.leaderHealth, { leader: 'eu-1', term });
    assert.equal(member('eu-3', 3).leaderHealth, null);
    for (const bad of ['nope', '{"leader":"eu-1"}', '{"leader":"","term":"2026-12-02T22:40:00Z"}', '{"term":1}']) {
      const p = parseNode(node('eu-2', { annotations: { [Annotation.leaderHealth]: bad } }));
      assert.equal(p.ok, false, bad);
      if (!p.ok) assert.match(p.errors[0]!.message, /leader-health/);
    }
  });

  test('a follower under a Lease probes the remote leaders, spread and capped; a leader or a fallback does not', () => {
    const cluster = parsed(objects(3));
    const follower = topologyOf(cluster, 'eu-2', meshOptions({ granularity: 'location' }), NOW, leases);
    const targets = relayTargets(follower);
    assert.equal(targets.length, 3, 'at most three remote leaders a round');
    assert.ok(targets.every((p) => p.kind === 'relay' && /^far-\d$/.test(p.node) && /^10\.43\.\d\.1$/.test(p.address)));
    const other = relayTargets(topologyOf(cluster, 'eu-3', meshOptions({ granularity: 'location' }), NOW, leases));
    assert.notDeepEqual(
      other.map((p) => p.node),
      targets.map((p) => p.node),
      'followers start at different remote leaders',
    );
    const lease = {
      name: 'l',
      holder: 'eu-1',
      renewTime: term,
      acquireTime: term,
      durationSeconds: 10,
      transitions: 0,
      resourceVersion: '1',
    };
    assert.deepEqual(relayTerm(follower, lease), { leader: 'eu-1', term });
    assert.equal(relayTerm(follower, { ...lease, holder: 'eu-3' }), null, 'the Lease names another holder');
    const leader = topologyOf(cluster, 'eu-1', meshOptions({ granularity: 'location' }), NOW, leases);
    assert.deepEqual(relayTargets(leader), []);
    assert.equal(relayTerm(leader, lease), null);
    const fallback = topologyOf(cluster, 'eu-2', meshOptions({ granularity: 'location' }), NOW);
    assert.equal(relayTerm(fallback, lease), null, 'Kilo’s rule chose the leader: nobody to report to');
  });

  test('the reporter reports after three failing rounds of one term, withdraws after three passing, starts afresh on a new term', () => {
    const r = new RelayReporter(3);
    const t1 = { leader: 'eu-1', term };
    assert.equal(r.round(t1, true), null);
    assert.equal(r.round(t1, true), null);
    assert.equal(r.round(t1, null), null, 'nothing probed: no verdict either way');
    assert.deepEqual(r.round(t1, true), t1);
    assert.deepEqual(r.round(t1, false), t1);
    assert.deepEqual(r.round(t1, false), t1);
    assert.deepEqual(r.round(t1, true), t1, 'a failure in between restarts the count');
    r.round(t1, false);
    r.round(t1, false);
    assert.equal(r.round(t1, false), null);
    r.round(t1, true);
    r.round(t1, true);
    assert.deepEqual(r.round(t1, true), t1);
    assert.equal(r.round({ leader: 'eu-1', term: term + 1 }, true), null, 'the same leader’s next term');
    assert.equal(r.round(null, null), null, 'no Lease leader any more');
  });

  test('the leader resigns when most followers that answer it report its term, and only then', () => {
    const me = 'eu-1';
    const all = (reports: Record<string, { leader: string; term: number }>) => [
      member('eu-1', 1),
      ...[2, 3, 4].map((i) => member(`eu-${i}`, i, 'eu', reports[`eu-${i}`])),
      member('far-1', 9, 'far', { leader: 'far-0', term }),
    ];
    const mine = { leader: me, term };
    const judge = (nodes: KiloNode[], answering: ReadonlySet<string> | null, remoteOk = true) => {
      const c = forwardingComplaints(nodes, me, 'eu', term, answering);
      return { ...c, denied: forwardingDenied(c, remoteOk) };
    };
    assert.deepEqual(judge(all({ 'eu-2': mine }), null), { complaining: ['eu-2'], counted: 3, denied: false });
    assert.equal(judge(all({ 'eu-2': mine, 'eu-3': mine }), null).denied, true, 'two of three');
    assert.equal(
      judge(all({ 'eu-2': mine }), new Set(['eu-2'])).denied,
      true,
      'followers that are down (not answering) do not count',
    );
    assert.equal(
      judge(all({ 'eu-2': mine, 'eu-3': mine }), null, false).denied,
      false,
      'the leader cannot reach the far side either: not its forwarding',
    );
    const stale = { leader: me, term: term - 1 };
    assert.equal(judge(all({ 'eu-2': stale, 'eu-3': stale }), null).denied, false, 'a report on an earlier term');
    const other = { leader: 'eu-4', term };
    assert.equal(judge(all({ 'eu-2': other, 'eu-3': other }), null).denied, false, 'a report on another leader');
    assert.equal(judge([member('eu-1', 1)], null).denied, false, 'no followers, no verdict');
  });

  test('a leader that resigned for its followers stays out for the hold time (fake clock)', () => {
    const v = new RelayVerdict(10_000);
    let now = term;
    assert.equal(v.judge(now, null), null);
    assert.match(v.judge(now, ['eu-2', 'eu-3'])!, /eu-2, eu-3/);
    now += 9_999;
    assert.match(v.judge(now, null)!, /followers' probes through this node fail/);
    now += 1;
    assert.equal(v.judge(now, null), null);
  });
});
