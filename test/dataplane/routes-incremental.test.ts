/**
 * A desired state patched from the last one (routes/incremental.ts) is the state a whole build makes,
 * and its changes are what diffState of the two gives, in the same order; where it cannot say, it
 * says null and the whole build decides. Plans shaped like a cross mesh's (a route to each node's pod
 * CIDR and internal IP through its WireGuard IP, the WireGuard IPs, the guard), changed as a cluster
 * changes them, and at random.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { diffState } from '../../src/dataplane/routes/diff.js';
import { addGuard } from '../../src/dataplane/routes/guard.js';
import { patchedState, type BuiltFrom } from '../../src/dataplane/routes/incremental.js';
import { defaultOwnership, desiredState } from '../../src/dataplane/routes/state.js';
import { kiloTable, type PlanGuardRoute, type PlanRoute, type PlanRule } from '../../src/mesh/types.js';
import { AddressMemo } from '../../src/net/memo.js';

const devices = { kilo: 'kilo0', private: 'eth0', tunnel: null };
const rules: PlanRule[] = [{ src: '10.42.0.0/24', dst: null, table: kiloTable, iif: null }];

interface Mesh {
  routes: PlanRoute[];
  guard: PlanGuardRoute[];
}

/** Node n's routes, as a cross mesh plans them (the WireGuard IPs after every node's routes). */
function mesh(nodes: readonly number[]): Mesh {
  const routes: PlanRoute[] = [];
  const via = (n: number) => `10.4.${n >> 8}.${n & 0xff}`;
  for (const n of nodes) {
    const gw = via(n);
    routes.push({
      dst: `10.${42 + (n >> 8)}.${n & 0xff}.0/24`,
      gw,
      dev: 'kilo',
      src: '172.16.0.1',
      table: 'main',
      onlink: true,
    });
    routes.push({
      dst: `172.${16 + (n >> 8)}.${n & 0xff}.1/32`,
      gw,
      dev: 'kilo',
      src: '172.16.0.1',
      table: 'main',
      onlink: true,
    });
  }
  for (const n of nodes)
    routes.push({
      dst: `10.5.${n >> 8}.${n & 0xff}/32`,
      gw: null,
      dev: 'kilo',
      src: null,
      table: 'main',
      onlink: false,
    });
  const guard = routes.filter((r) => r.gw !== null).map((r) => ({ dst: r.dst, table: r.table }));
  return { routes, guard };
}

const memo = new AddressMemo();

function whole(m: Mesh) {
  const state = desiredState(m.routes, rules, devices, defaultOwnership, memo);
  addGuard(state, m.guard, defaultOwnership.protocol, memo);
  return state;
}

function built(m: Mesh): BuiltFrom {
  return { routes: m.routes, guard: m.guard, state: whole(m) };
}

/** Patches `before` into `after`; when it does, the result must be the whole build's and diff's. */
function check(before: Mesh, after: Mesh, name: string, strict = true): boolean {
  const last = built(before);
  const wanted = desiredState([], rules, devices, defaultOwnership, memo).rules;
  const patched = patchedState(last, after.routes, after.guard, wanted, devices, defaultOwnership.protocol, memo);
  const expected = whole(after);
  if (!patched) return false;
  assert.equal(expected.problems.length, 0, `${name}: patched where the whole build has problems`);
  assert.deepEqual(patched.state.routes, expected.routes, `${name}: routes`);
  // The same entries; a patched map holds its new keys last (only a diff's order of changes follows it).
  const sorted = (m: ReadonlyMap<string, unknown>) => [...m].sort((a, b) => (a[0] < b[0] ? -1 : 1));
  assert.deepEqual(sorted(patched.state.byKey), sorted(expected.byKey), `${name}: by key`);
  assert.deepEqual(patched.state.rules, expected.rules, `${name}: rules`);
  // The last state's map is the patched one's now: the diff is taken against the last plan built again.
  assert.deepEqual(patched.ops, diffState(expected, whole(before), expected.protectedKeys), `${name}: changes`);
  // A route the last plan had as it is, in its place, is the last state's own object: not built again.
  // (A node moved in the order is built again, and changes nothing.)
  if (strict) {
    const had = new Set([...before.routes, ...before.guard].map((r) => JSON.stringify(r)));
    const same = [...after.routes, ...after.guard].filter((r) => had.has(JSON.stringify(r))).length;
    const kept = new Set(last.state.routes);
    const reused = patched.state.routes.filter((r) => kept.has(r)).length;
    assert.equal(reused, same, `${name}: kept routes reused`);
  }
  return true;
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);
const base = range(1, 200);

test('a node joining, leaving or moving is patched, as the whole build and diff would make it', () => {
  const cases: [string, Mesh][] = [
    ['the same plan', mesh(base)],
    ['a node joins at the end', mesh([...base, 250])],
    ['a node joins in the middle', mesh([...base.slice(0, 100), 1000, ...base.slice(100)])],
    ['a node leaves', mesh(base.filter((n) => n !== 77))],
    ['two nodes leave far apart', mesh(base.filter((n) => n !== 3 && n !== 190))],
    ['the first and the last leave', mesh(base.slice(1, -1))],
  ];
  for (const [name, after] of cases) assert.ok(check(mesh(base), after, name), `${name}: patched`);

  const moved = mesh(base);
  moved.routes[10] = { ...moved.routes[10]!, gw: '10.4.9.9' };
  assert.ok(check(mesh(base), moved, 'a gateway changes'), 'a gateway change is patched');
  const sourced = mesh(base);
  sourced.routes[11] = { ...sourced.routes[11]!, src: '172.16.0.2' };
  assert.ok(check(mesh(base), sourced, 'a source changes'), 'a source change is patched');
  const tabled = mesh(base);
  tabled.routes[12] = { ...tabled.routes[12]!, table: kiloTable };
  assert.ok(check(mesh(base), tabled, 'a route moves to another table'), 'a table change is patched');
  const redone = mesh(base);
  redone.routes[13] = { ...redone.routes[13]!, dst: '10.99.0.0/24' };
  assert.ok(check(mesh(base), redone, 'a destination written otherwise'), 'a destination change is patched');
});

test('a conflict, a problem, a duplicate or a rewrite is left to the whole build', () => {
  const conflict = mesh(base);
  // Another route at the key of node 1's pod CIDR (a text the kernel reads as the same prefix).
  conflict.routes.push({ ...conflict.routes[0]!, dst: '10.42.1.7/24', gw: '10.4.0.99' });
  assert.equal(check(mesh(base), conflict, 'a conflict'), false);
  const duplicate = mesh(base);
  duplicate.routes.push({ ...duplicate.routes[0]! });
  assert.equal(check(mesh(base), duplicate, 'a duplicate'), false);
  const bad = mesh(base);
  bad.routes.push({ ...bad.routes[0]!, dst: 'not a prefix' });
  assert.equal(check(mesh(base), bad, 'a problem'), false);
  // From a state with a problem: only a whole build knows what its protected keys hold.
  assert.equal(check(bad, mesh(base), 'from a problem'), false);
  assert.equal(check(mesh(base), mesh(range(1000, 1200)), 'every node another'), false);
  const noDevice = { ...devices, kilo: null as unknown as string };
  const last = built(mesh(base));
  const after = mesh([...base, 300]);
  assert.equal(patchedState(last, after.routes, after.guard, [], noDevice, 107, memo), null, 'a role without a device');
});

test('random changes: patched exactly as the whole build and diff, or left to it', () => {
  let seed = 7;
  const random = (n: number) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
  let nodes = range(1, 120);
  let patchedCount = 0;
  for (let round = 0; round < 300; round++) {
    const before = mesh(nodes);
    const next = [...nodes];
    for (let k = random(4); k >= 0; k--) {
      const what = random(3);
      if (what === 0 && next.length > 1) next.splice(random(next.length), 1);
      else if (what === 1) next.splice(random(next.length + 1), 0, 500 + random(400));
      else next.push(900 + random(300));
    }
    const unique = [...new Set(next)];
    const after = mesh(unique);
    if (random(5) === 0 && after.routes.length > 0) {
      const i = random(after.routes.length);
      after.routes[i] = { ...after.routes[i]!, gw: after.routes[i]!.gw === null ? null : '10.4.7.7' };
    }
    if (check(before, after, `round ${round}`, false)) patchedCount++;
    nodes = unique;
  }
  assert.ok(patchedCount > 250, `most rounds patched (${patchedCount} of 300)`);
});
