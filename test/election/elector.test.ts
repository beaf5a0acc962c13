import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { electedLeaders } from '../../src/election/decide.js';
import { Elector } from '../../src/election/elector.js';
import { leaseName } from '../../src/election/lease-name.js';
import { LeaseBoard } from '../../src/backend/memory-leases.js';
import { defaultElectionTiming as timing } from '../../src/election/types.js';
import type { KiloNode } from '../../src/model/types.js';
import { kiloNode } from '../helpers/cluster.js';

const T0 = 1_764_662_400_000;

function member(name: string, i: number, o: { leader?: boolean; location?: string } = {}): KiloNode {
  return kiloNode(name, {
    location: o.location ?? 'eu',
    internalIP: `10.0.0.${i}/24`,
    endpoint: `198.51.100.${i}:51820`,
    podCIDR: `10.42.${i}.0/24`,
    ...(o.leader ? { leader: true } : {}),
  });
}

/** Candidates on one board, each with its own clock offset from the shared fake time. */
function cluster(nodes: KiloNode[], offsets: Record<string, number> = {}) {
  const board = new LeaseBoard();
  let now = T0;
  const log: string[] = [];
  const electors = new Map(
    nodes.map((n) => {
      const client = board.client();
      const e = new Elector(client, n.name, timing, () => now + (offsets[n.name] ?? 0), {
        acquired: (l) => log.push(`${n.name} acquired ${l}`),
        released: (l, why) => log.push(`${n.name} released ${l}: ${why}`),
        renewalFailed: (l) => log.push(`${n.name} renewal failed ${l}`),
      });
      e.observe(nodes, n.location);
      return [n.name, e] as const;
    }),
  );
  const holder = () => board.leases.get(leaseName('eu'))?.holder ?? null;
  return {
    board,
    electors,
    log,
    holder,
    advance: (ms: number) => (now += ms),
    now: () => now,
    /** Steps every candidate once, in this order, letting the "watch" deliver in between. */
    async round(order = [...electors.keys()]) {
      for (const name of order) {
        await electors.get(name)!.tick();
        await new Promise((r) => setImmediate(r));
      }
    },
  };
}

describe('lease election with a fake clock', () => {
  test('racing candidates: one wins, the others wait; the winner renews', async () => {
    const nodes = [member('a', 1), member('b', 2), member('c', 3)];
    const c = cluster(nodes);
    // All three act on the same empty view: every create but the first is AlreadyExists.
    await Promise.all([...c.electors.values()].map((e) => e.tick()));
    assert.equal(c.holder(), 'a');
    assert.deepEqual(c.log, ['a acquired eu']);
    assert.deepEqual(
      [...c.electors.values()].map((e) => e.leads()),
      [true, false, false],
    );
    for (let i = 0; i < 10; i++) {
      c.advance(timing.renewMs);
      await c.round(['c', 'b', 'a']);
    }
    assert.equal(c.holder(), 'a', 'a renewing holder keeps its Lease');
    assert.deepEqual(c.log, ['a acquired eu']);
  });

  test('expiry: a silent holder is replaced only after duration + skew margin', async () => {
    const nodes = [member('a', 1), member('b', 2)];
    const c = cluster(nodes);
    await c.round(['a']);
    // a dies: only b steps from now on.
    c.advance(timing.durationMs + timing.skewMs - 1);
    await c.round(['b']);
    assert.equal(c.holder(), 'a', 'still binding one millisecond before expiry');
    assert.equal(c.electors.get('a')!.leads(), false, 'the holder itself stopped leading a margin earlier');
    c.advance(1);
    await c.round(['b']);
    assert.equal(c.holder(), 'b');
    assert.equal(c.board.leases.get(leaseName('eu'))!.transitions, 1);
  });

  test('voluntary release: the next candidate takes over at once, and the old one does not take it back', async () => {
    const nodes = [member('a', 1), member('b', 2)];
    const c = cluster(nodes);
    await c.round(['a', 'b']);
    await c.electors.get('a')!.resign('shutting down');
    await c.round(['b']);
    assert.equal(c.holder(), 'b');
    for (let i = 0; i < 10; i++) {
      c.advance(timing.renewMs);
      await c.round(['a', 'b']);
    }
    assert.equal(c.holder(), 'b', 'no flapping back to a');
    assert.deepEqual(c.log, ['a acquired eu', 'a released eu: shutting down', 'b acquired eu']);
  });

  test('an unfit holder releases; it contends again only when the Lease is free', async () => {
    const nodes = [member('a', 1), member('b', 2)];
    const c = cluster(nodes);
    await c.round(['a', 'b']);
    c.electors.get('a')!.setUnfit('probes failing: b');
    c.advance(timing.renewMs);
    await c.round(['a', 'b']);
    assert.equal(c.holder(), 'b');
    c.electors.get('a')!.setUnfit(null);
    c.advance(timing.renewMs);
    await c.round(['a', 'b']);
    assert.equal(c.holder(), 'b');
  });

  test('annotation preference: only nodes carrying kilo.squat.ai/leader contend', async () => {
    const nodes = [member('a', 1), member('b', 2, { leader: true }), member('c', 3)];
    const c = cluster(nodes);
    await c.round();
    assert.equal(c.holder(), 'b');
    // A holder that loses eligibility (another node annotated, itself not) gives the Lease up.
    const later = [member('a', 1, { leader: true }), member('b', 2), member('c', 3)];
    for (const e of c.electors.values()) e.observe(later, 'eu');
    c.advance(timing.renewMs);
    await c.round(['b', 'a', 'c']);
    assert.equal(c.holder(), 'a');
  });

  test('a holder that vanished from the cluster binds nobody', async () => {
    const nodes = [member('a', 1), member('b', 2)];
    const c = cluster(nodes);
    await c.round(['a']);
    const without = [member('b', 2)];
    c.electors.get('b')!.observe(without, 'eu');
    c.advance(100);
    await c.round(['b']);
    assert.equal(c.holder(), 'b', 'taken at once, not after expiry');
  });

  test('clock skew within the margin: the old holder stops before the new one starts', async () => {
    const nodes = [member('a', 1), member('b', 2)];
    // b's clock runs ahead of a's by the whole margin: b sees a's Lease expire earliest.
    const c = cluster(nodes, { b: timing.skewMs });
    await c.round(['a']);
    let overlap = 0;
    for (let t = 0; t < 2 * timing.durationMs; t += 50) {
      c.advance(50);
      await c.round(['b']);
      if (c.electors.get('a')!.leads() && c.electors.get('b')!.leads()) overlap++;
    }
    assert.equal(c.holder(), 'b');
    assert.equal(overlap, 0);
  });

  test("observers: the holder while the Lease binds, else Kilo's rule as a fallback", () => {
    const nodes = [member('a', 1), member('b', 2), member('z', 3, { location: 'us' })];
    const lease = {
      name: leaseName('eu'),
      holder: 'b',
      renewTime: T0,
      acquireTime: T0,
      durationSeconds: 10,
      transitions: 0,
      resourceVersion: '1',
    };
    const leases = new Map([['eu', lease]]);
    const at = (ms: number) => Object.fromEntries(electedLeaders(nodes, leases, T0 + ms, timing));
    assert.deepEqual(at(5_000), {
      eu: { node: 'b', reason: 'lease' },
      us: { node: 'z', reason: 'fallback' },
    });
    assert.deepEqual(at(10_999).eu, { node: 'b', reason: 'lease' });
    assert.deepEqual(at(11_000).eu, { node: 'a', reason: 'fallback' });
  });

  test('an agent cut off from the API server keeps the last holder it saw, even past expiry', () => {
    const nodes = [member('a', 1), member('b', 2)];
    const lease = {
      name: leaseName('eu'),
      holder: 'b',
      renewTime: T0,
      acquireTime: T0,
      durationSeconds: 10,
      transitions: 0,
      resourceVersion: '1',
    };
    const leases = new Map([['eu', lease]]);
    const self = (apiStale: boolean) => ({ name: 'a', location: 'eu', leads: false, apiStale });
    assert.deepEqual(electedLeaders(nodes, leases, T0 + 60_000, timing, self(true)).get('eu'), {
      node: 'b',
      reason: 'lease',
    });
    assert.deepEqual(electedLeaders(nodes, leases, T0 + 60_000, timing, self(false)).get('eu'), {
      node: 'a',
      reason: 'fallback',
    });
  });
});

test('Lease names: DNS-1123 labels, bounded, distinct for locations that read alike', () => {
  const names = ['eu-1', 'EU_1', 'eu 1', '', 'x'.repeat(300), 'Zürich/Nord', '-'].map(leaseName);
  for (const n of names) {
    assert.match(n, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
    assert.ok(n.length <= 63, n);
  }
  assert.equal(new Set(names).size, names.length);
  assert.equal(leaseName('eu-1'), leaseName('eu-1'));
});
