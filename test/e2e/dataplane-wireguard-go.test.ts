/**
 * `kg apply --watch` supervises the wireguard-go it started: killed, it is restarted, and the new
 * interface gets back not only its peers but also its address, link state and the routes over it
 * (which the kernel dropped with the old interface), without waiting for a change of the file.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { peer, wgKey } from '../helpers/cluster.js';
import { skipNoNetns } from '../helpers/netns.js';
import {
  assertKernelIs,
  commandOf,
  namespacePids,
  oraclePlan,
  labWithEu1,
  readKernel,
  until,
  twoLocationNodes,
} from './dataplane-lab.js';

const mesh = ['--mesh-granularity', 'cross', '--encapsulate', 'never'];

test(
  'a killed wireguard-go is restarted and the plan re-applied on the new interface',
  { skip: skipNoNetns },
  async (t) => {
    const { lab, eu1 } = labWithEu1(t);
    const file = lab.writeCluster([
      ...twoLocationNodes({ eu1: eu1.publicKey, us1: wgKey('us-1') }),
      peer('laptop', { allowedIPs: ['10.5.0.1/32'] }),
    ]);
    const plan = oraclePlan(file, 'eu-1', mesh);
    const devices = { kilo: 'kilo0', private: 'lan0', tunnel: null };
    assert.ok(
      plan.routes.some((r) => r.dev === 'kilo'),
      'routes over kilo0 that vanish with it',
    );

    const { child, done, stderr } = lab.start(eu1, file, ['--watch', ...mesh]);
    t.after(() => child.kill('SIGKILL'));
    const applied = () =>
      stderr()
        .split('\n')
        .filter((l) => l.includes('"msg":"applied"')).length;
    await until('the first apply', () => applied() === 1);
    assertKernelIs(eu1.ns, plan, devices, eu1.publicKey, 'before the crash');
    const wireGuardGo = () => namespacePids(eu1.ns.name).filter((pid) => /wireguard-go/.test(commandOf(pid)));
    const [first] = wireGuardGo();
    assert.ok(first);

    process.kill(first, 'SIGKILL');
    await until('the interface to go', () => readKernel(eu1.ns).addresses === null);
    await until('a reconcile after the restart', () => applied() === 2);
    const [second] = wireGuardGo();
    assert.ok(second && second !== first, 'a new wireguard-go runs');
    assertKernelIs(eu1.ns, plan, devices, eu1.publicKey, 'after the restart');

    child.kill('SIGTERM');
    const run = await done;
    assert.equal(run.status, 0, run.stderr);
  },
);
