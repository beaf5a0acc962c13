import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LeaseConflict, type LeaseApi } from '../../src/backend/leases.js';
import type { LeaseRecord } from '../../src/backend/leases.js';
import { waitUntil as until } from '../../packages/lab/src/apiserver.js';

/** One API server's Leases (memory or the lab API server) and clients of it. */
export interface LeaseApiHarness {
  /** A new client of the same store, not started. */
  client(): LeaseApi;
  close(): Promise<void>;
}

const T = Date.UTC(2026, 11, 2, 23, 0, 0, 250);

function record(name: string, holder: string | null, at = T): LeaseRecord {
  return {
    name,
    holder,
    renewTime: at,
    acquireTime: at,
    durationSeconds: 10,
    transitions: 0,
    resourceVersion: '',
  };
}

/**
 * What the election relies on from a LeaseApi, run against the in-memory board and against the
 * lab API server through @kubernetes/client-node: a create that loses a race is LeaseConflict,
 * a write from a stale read is LeaseConflict, reads see what was written (times to the
 * millisecond), every client's watch follows every write, and a release frees the Lease.
 */
export function leaseApiContract(name: string, harness: () => Promise<LeaseApiHarness>): void {
  describe(`LeaseApi contract: ${name}`, () => {
    const withClients = async (f: (a: LeaseApi, b: LeaseApi, changes: () => number) => Promise<void>) => {
      const h = await harness();
      const a = h.client();
      const b = h.client();
      let changes = 0;
      try {
        await a.start(() => {});
        await b.start(() => changes++);
        await f(a, b, () => changes);
      } finally {
        await a.stop();
        await b.stop();
        await h.close();
      }
    };

    test('create: stored with a version; a second create is AlreadyExists (LeaseConflict)', () =>
      withClients(async (a, b) => {
        const stored = await a.create(record('kilo-leader-eu', 'n1'));
        assert.notEqual(stored.resourceVersion, '');
        assert.equal(stored.holder, 'n1');
        assert.deepEqual(a.cached('kilo-leader-eu'), stored, 'a client reads its own write at once');
        await assert.rejects(b.create(record('kilo-leader-eu', 'n2')), LeaseConflict);
        assert.equal((await b.get('kilo-leader-eu'))?.holder, 'n1', 'the loser changed nothing');
      }));

    test('get: the fields as written, to the millisecond; a missing Lease is null', () =>
      withClients(async (a, b) => {
        const stored = await a.create({ ...record('kilo-leader-eu', 'n1'), transitions: 3, durationSeconds: 7 });
        const got = await b.get('kilo-leader-eu');
        assert.deepEqual(got, stored);
        assert.equal(got?.renewTime, T);
        assert.equal(got?.acquireTime, T);
        assert.equal(got?.durationSeconds, 7);
        assert.equal(got?.transitions, 3);
        assert.equal(await b.get('kilo-leader-nowhere'), null);
      }));

    test('update: from the current version it wins and moves the version; from a stale one it is Conflict', () =>
      withClients(async (a, b) => {
        const first = await a.create(record('kilo-leader-eu', 'n1'));
        const renewed = await a.update({ ...first, renewTime: T + 2_000 });
        assert.notEqual(renewed.resourceVersion, first.resourceVersion);
        assert.equal(renewed.renewTime, T + 2_000);
        // b still holds the first version: its takeover must lose.
        await assert.rejects(b.update({ ...first, holder: 'n2', acquireTime: T + 3_000 }), LeaseConflict);
        assert.deepEqual(await b.get('kilo-leader-eu'), renewed);
        await assert.rejects(
          a.update({ ...record('kilo-leader-gone', 'n1'), resourceVersion: '1' }),
          (e: unknown) => e instanceof Error && !(e instanceof LeaseConflict),
          'updating a Lease that does not exist is an error, not a lost race',
        );
      }));

    test('list and watch: a client started late sees what exists; every write reaches every client', async () => {
      const h = await harness();
      const a = h.client();
      const late = h.client();
      let changes = 0;
      try {
        await a.start(() => {});
        const stored = await a.create(record('kilo-leader-eu', 'n1'));
        await a.create(record('kilo-leader-us', 'n9'));
        await late.start(() => changes++);
        assert.deepEqual(late.cached('kilo-leader-eu'), stored, 'listed before start resolves');
        assert.equal(late.cached('kilo-leader-us')?.holder, 'n9');
        const before = changes;
        const renewed = await a.update({ ...stored, renewTime: T + 2_000 });
        await until(
          'the watch brings the renewal',
          () => late.cached('kilo-leader-eu')?.resourceVersion === renewed.resourceVersion,
        );
        assert.deepEqual(late.cached('kilo-leader-eu'), renewed);
        assert.ok(changes > before, 'onChange followed the write');
        await late.stop();
        const stopped = changes;
        await a.update({ ...renewed, renewTime: T + 4_000 });
        await new Promise((r) => setTimeout(r, 200));
        assert.equal(changes, stopped, 'no changes after stop');
      } finally {
        await a.stop();
        await late.stop();
        await h.close();
      }
    });

    test('release: an empty holder frees the Lease for the next candidate, who takes it from that version', () =>
      withClients(async (a, b) => {
        const held = await a.create(record('kilo-leader-eu', 'n1'));
        const released = await a.update({ ...held, holder: null, renewTime: T + 1_000 });
        assert.equal(released.holder, null);
        await until(
          'b sees the release',
          () => b.cached('kilo-leader-eu')?.resourceVersion === released.resourceVersion,
        );
        assert.equal(b.cached('kilo-leader-eu')?.holder, null);
        const taken = await b.update({
          ...b.cached('kilo-leader-eu')!,
          holder: 'n2',
          renewTime: T + 1_500,
          acquireTime: T + 1_500,
          transitions: 1,
        });
        assert.equal(taken.holder, 'n2');
        assert.equal(taken.transitions, 1);
        await until('a sees the new holder', () => a.cached('kilo-leader-eu')?.holder === 'n2');
      }));
  });
}
