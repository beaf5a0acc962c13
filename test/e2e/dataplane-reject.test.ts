/**
 * A plan the machine cannot take in full: the kernel refuses routes over a private interface that
 * is down, and the interface holding the internal IP vanishes. Each time `kg apply` names the routes
 * it could not install and why, applies everything else (peers, other routes, firewall), exits
 * non-zero; the next run after the cause is fixed converges.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Plan } from '../../src/mesh/types.js';
import type { KubeObject } from '../../src/model/parse.js';
import { peer, wgKey } from '../helpers/cluster.js';
import { skipNoNetns } from '../helpers/netns.js';
import {
  assertKernelIs,
  expectedKernel,
  oraclePlan,
  labWithEu1,
  privateInterface,
  readKernel,
  type ApplyRun,
  type LabNode,
  twoLocationNodes,
} from './dataplane-lab.js';

const mesh = ['--mesh-granularity', 'cross', '--encapsulate', 'never'];
const devices = { kilo: 'kilo0', private: 'lan0', tunnel: null };

function cluster(eu1: LabNode, variant: 'A' | 'B'): KubeObject[] {
  return [
    ...twoLocationNodes({ eu1: eu1.publicKey, us1: wgKey('us-1'), us2: wgKey('us-2') }, { us2: variant === 'A' }),
    peer('laptop', { allowedIPs: ['10.5.0.1/32'] }),
    ...(variant === 'B' ? [peer('phone', { allowedIPs: ['10.5.0.2/32'] })] : []),
  ];
}

type PlanRoute = Plan['routes'][number];

/** How `kg apply` names a route of the plan (real device names), up to the device. */
function shown(r: PlanRoute): string {
  return `route ${r.dst}${r.gw ? ` via ${r.gw}` : ''} dev `;
}

const overPrivate = (r: PlanRoute) => r.dev === 'private';

/**
 * The routes `failing` selects are each named in an error saying `reason`; everything else of the
 * plan (peers, firewall, address, the other routes) is on the machine.
 */
function assertAllBut(
  eu1: LabNode,
  plan: Plan,
  run: ApplyRun,
  failing: (r: PlanRoute) => boolean,
  reason: RegExp,
  what: string,
): void {
  assert.equal(run.status, 1, `${what}: kg apply exits non-zero\n${run.stderr}`);
  const named = run.errors.filter((e) => e.startsWith('not applied: '));
  const failed = plan.routes.filter(failing);
  for (const r of failed) {
    const line = named.find((e) => e.includes(shown(r)));
    assert.ok(line, `${what}: an error names ${shown(r)}…:\n${run.errors.join('\n')}`);
    assert.match(line, reason, `${what}: the error says why`);
  }
  assert.equal(named.length, failed.length, `${what}: nothing else failed:\n${run.errors.join('\n')}`);
  const actual = readKernel(eu1.ns);
  const want = expectedKernel({ ...plan, routes: plan.routes.filter((r) => !failing(r)) }, devices, eu1.publicKey);
  assert.deepEqual(actual.wireGuard, want.wireGuard, `${what}: WireGuard peers applied`);
  assert.deepEqual(actual.firewall, want.firewall, `${what}: firewall applied`);
  assert.deepEqual(actual.addresses, want.addresses, `${what}: address`);
  assert.deepEqual(actual.routes, want.routes, `${what}: every other route applied`);
}

test(
  'routes the kernel refuses or that lost their interface are named; the rest is applied; the next run converges',
  { skip: skipNoNetns },
  async (t) => {
    const { lab, eu1 } = labWithEu1(t);
    const fileA = lab.writeCluster(cluster(eu1, 'A'));
    const fileB = lab.writeCluster(cluster(eu1, 'B'));
    const planA = oraclePlan(fileA, 'eu-1', mesh);
    const planB = oraclePlan(fileB, 'eu-1', mesh);
    assert.ok(planB.routes.some(overPrivate), 'the plan routes to eu-2 over lan0');
    assert.ok(
      planB.routes.some((r) => r.dev === 'kilo'),
      'and to us-1 and the Peers over kilo0',
    );

    await t.test('plan A applies cleanly', async () => {
      const run = await lab.apply(eu1, fileA, mesh);
      assert.equal(run.status, 0, run.stderr);
      assertKernelIs(eu1.ns, planA, devices, eu1.publicKey, 'A');
    });

    await t.test(
      'the kernel refuses routes over a private interface that is down; plan B is applied otherwise',
      async () => {
        eu1.ns.sh('ip link set lan0 down');
        const run = await lab.apply(eu1, fileB, mesh);
        assertAllBut(eu1, planB, run, overPrivate, /Nexthop device is not up/, 'lan0 down');
        assert.equal(run.applied?.wireGuard?.added.length, 1, 'the Peer phone was added');
        assert.equal(run.applied?.wireGuard?.removed.length, 1, 'us-2 was removed');
        assert.ok((run.applied?.routes ?? 0) > 0, 'the route writes that worked are counted');
      },
    );

    await t.test('with lan0 up again the next run converges', async () => {
      eu1.ns.sh('ip link set lan0 up');
      const run = await lab.apply(eu1, fileB, mesh);
      assert.equal(run.status, 0, run.stderr);
      assert.deepEqual(run.errors, []);
      assertKernelIs(eu1.ns, planB, devices, eu1.publicKey, 'lan0 up');
      assert.equal(
        run.applied?.routes,
        planB.routes.filter(overPrivate).length,
        'only the missing routes were written',
      );
      assert.equal(run.applied?.writes, run.applied?.routes);
    });

    await t.test(
      'the interface holding the internal IP vanishes: its routes are named, nothing else changes',
      async () => {
        eu1.ns.sh('ip link del lan0');
        const run = await lab.apply(eu1, fileB, mesh);
        // The kernel also dropped the routes whose source was the internal IP, and refuses them now.
        const src = (r: PlanRoute) => r.src === '192.168.10.1';
        assert.ok(planB.routes.some(src));
        assertAllBut(
          eu1,
          planB,
          run,
          (r) => overPrivate(r) || src(r),
          /no interface holds the node's internal IP|Invalid prefsrc address/,
          'lan0 deleted',
        );
        for (const e of run.errors.filter((l) => l.startsWith('not applied: ')))
          assert.match(
            e,
            / dev private: .*internal IP| src 192\.168\.10\.1.*: Invalid prefsrc address/,
            'each says its own reason',
          );
        assert.equal(run.applied?.writes, 0, 'nothing else needed a write');
        assert.ok(
          run.logs.some((l) => l.level === 40 && /192\.168\.10\.1/.test(JSON.stringify(l))),
          'a warning names the internal IP',
        );
      },
    );

    await t.test('with lan0 back the next run converges', async () => {
      privateInterface(eu1.ns, 'lan0', '192.168.10.1/24');
      const run = await lab.apply(eu1, fileB, mesh);
      assert.equal(run.status, 0, run.stderr);
      assertKernelIs(eu1.ns, planB, devices, eu1.publicKey, 'lan0 back');
    });
  },
);
