/**
 * `kg apply` never touches what is not Kilo's: routes, rules and iptables rules that were on the
 * machine before stay exactly as they were through apply, re-apply, a stop without clean-up and a
 * stop with clean-up; clean-up removes all of Kilo's state and, with --clean-up-interface, wireguard-go.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { peer, wgKey } from '../helpers/cluster.js';
import { skipNoNetns, type TestNamespace } from '../helpers/netns.js';
import {
  Lab,
  allRoutes,
  allRules,
  assertKernelIs,
  commandOf,
  namespacePids,
  oraclePlan,
  labWithEu1,
  readKernel,
  savedFirewall,
  until,
  type ApplyRun,
  type LabNode,
  twoLocationNodes,
} from './dataplane-lab.js';

const mesh = ['--mesh-granularity', 'cross', '--encapsulate', 'never'];

/** Everything on the machine that is not Kilo's (and not made by the kernel for kilo0). */
function foreignState(ns: TestNamespace) {
  return {
    // The kernel adds a link-local address (and its local route) whenever it gets to it.
    routes: allRoutes(ns)
      .filter((r) => r.protocol !== '107' && r.dev !== 'kilo0' && !r.text.startsWith('local fe80:'))
      .map((r) => r.text)
      .sort(),
    rules: allRules(ns)
      .filter((r) => r.priority !== 1107)
      .map((r) => r.text)
      .sort(),
    firewall: savedFirewall(ns).foreign,
  };
}

/** Routes, rules and iptables rules an administrator, a CNI or another tool put there. */
function addForeignState(ns: TestNamespace): void {
  ns.sh(
    [
      'ip -6 addr add fd00::1/64 dev lan0 nodad',
      'ip route add 10.99.0.0/24 via 192.168.10.254 dev lan0',
      'ip route add 10.98.0.0/24 via 192.168.10.253 dev lan0 proto static',
      // In Kilo's own table, and more specific than one of Kilo's routes there would be.
      'ip route add 10.42.2.0/25 via 192.168.10.252 dev lan0 table 1107 proto static',
      'ip route add 10.97.0.0/24 dev lan0 table 1107 proto 108',
      'ip -6 route add fd99::/64 via fd00::fe dev lan0',
      // Next to Kilo's priority, and one pointing at Kilo's table.
      'ip rule add from 10.42.1.0/24 to 10.99.0.0/24 lookup 1107 priority 1106',
      'ip rule add to 192.168.10.2 lookup main priority 1108',
      'ip -6 rule add from fd00::/64 lookup 1107 priority 2000',
      // Built-in chains Kilo edits, a chain of its own, a comment that merely starts like Kilo's.
      'iptables -t nat -A POSTROUTING -s 10.42.0.0/16 -d 10.42.0.0/16 -j RETURN',
      'iptables -t nat -N FOREIGN-NAT',
      'iptables -t nat -A FOREIGN-NAT -j MASQUERADE',
      'iptables -t nat -A POSTROUTING -j FOREIGN-NAT',
      'iptables -A INPUT -p udp --dport 9999 -m comment --comment "Kilowatt meter" -j ACCEPT',
      'iptables -A FORWARD -s 10.42.1.0/24 -j ACCEPT',
      'iptables -N KILOWATT && iptables -A KILOWATT -j RETURN',
      'ip6tables -t nat -A POSTROUTING -s fd42::/64 -j MASQUERADE',
      'ip6tables -A INPUT -p ipv6-icmp -j ACCEPT',
    ].join(' && '),
  );
}

function cluster(eu1: LabNode) {
  return [
    ...twoLocationNodes({ eu1: eu1.publicKey, us1: wgKey('us-1') }),
    peer('laptop', { allowedIPs: ['10.5.0.1/32', 'fd05::1/128'] }),
  ];
}

/** wireguard-go processes in the namespace (kg started them detached). */
function wireGuardGo(ns: TestNamespace): number[] {
  return namespacePids(ns.name).filter((pid) => /wireguard-go/.test(commandOf(pid)));
}

/** Runs `kg apply --watch`, waits until it applied, stops it with SIGTERM and returns its run. */
async function watchThenStop(lab: Lab, n: LabNode, file: string, flags: string[]): Promise<ApplyRun> {
  const { child, done, stderr } = lab.start(n, file, ['--watch', ...flags]);
  await until('kg apply --watch to apply', () => /"msg":"applied"/.test(stderr()));
  child.kill('SIGTERM');
  return done;
}

test(
  'kg apply leaves foreign routes, rules and iptables rules alone; clean-up removes only Kilo state',
  { skip: skipNoNetns },
  async (t) => {
    const { lab, eu1 } = labWithEu1(t);
    addForeignState(eu1.ns);
    const before = foreignState(eu1.ns);
    for (const dst of ['10.99.0.0/24', '10.98.0.0/24', '10.42.2.0/25', '10.97.0.0/24', 'fd99::/64'])
      assert.ok(
        before.routes.some((r) => r.startsWith(`${dst} `)),
        `foreign route ${dst} is there: ${before.routes.join('; ')}`,
      );
    const file = lab.writeCluster(cluster(eu1));
    const plan = oraclePlan(file, 'eu-1', mesh);
    const devices = { kilo: 'kilo0', private: 'lan0', tunnel: null };
    // Kilo's routes in table main and its rules/chains share space with the foreign ones.
    assert.ok(plan.routes.some((r) => r.dst === '10.42.2.0/24'));

    await t.test('apply: Kilo state is the plan, foreign state unchanged', async () => {
      const run = await lab.apply(eu1, file, mesh);
      assert.equal(run.status, 0, run.stderr);
      assertKernelIs(eu1.ns, plan, devices, eu1.publicKey, 'after apply');
      assert.deepEqual(foreignState(eu1.ns), before);
    });

    await t.test('re-apply: zero writes, foreign state unchanged', async () => {
      const run = await lab.apply(eu1, file, mesh);
      assert.equal(run.status, 0, run.stderr);
      assert.equal(run.applied?.writes, 0);
      assert.deepEqual(foreignState(eu1.ns), before);
    });

    await t.test('--watch stopped with --clean-up=false: everything stays, wireguard-go keeps running', async () => {
      const [wgGo] = wireGuardGo(eu1.ns);
      assert.ok(wgGo, 'wireguard-go runs after kg apply exited');
      const run = await watchThenStop(lab, eu1, file, [...mesh, '--clean-up=false']);
      assert.equal(run.status, 0, run.stderr);
      assert.equal(run.applied?.writes, 0, 'the watching agent adopted the state');
      assertKernelIs(eu1.ns, plan, devices, eu1.publicKey, 'after stop without clean-up');
      assert.deepEqual(wireGuardGo(eu1.ns), [wgGo]);
      assert.deepEqual(foreignState(eu1.ns), before);
    });

    await t.test('--watch stopped by SIGTERM cleans up routes, rules and iptables, keeps the interface', async () => {
      const run = await watchThenStop(lab, eu1, file, mesh);
      assert.equal(run.status, 0, run.stderr);
      assert.deepEqual(run.errors, []);
      const m = readKernel(eu1.ns);
      assert.deepEqual(
        { routes: m.routes, rules: m.rules, firewall: m.firewall },
        { routes: [], rules: [], firewall: [] },
      );
      assert.equal(
        m.wireGuard?.peers.length,
        plan.peers.length,
        '--clean-up-interface=false keeps kilo0 and its peers',
      );
      assert.deepEqual(foreignState(eu1.ns), before);
    });

    await t.test('--clean-up-interface also removes kilo0 and stops wireguard-go', async () => {
      const run = await watchThenStop(lab, eu1, file, [...mesh, '--clean-up-interface']);
      assert.equal(run.status, 0, run.stderr);
      assert.deepEqual(run.errors, []);
      assert.ok((run.applied?.writes ?? 0) > 0, 'it first re-applied the routes and firewall cleaned up before');
      const m = readKernel(eu1.ns);
      assert.deepEqual(m, { wireGuard: null, addresses: null, up: null, routes: [], rules: [], firewall: [] });
      await until('wireguard-go to exit', () => wireGuardGo(eu1.ns).length === 0);
      assert.deepEqual(foreignState(eu1.ns), before);
    });
  },
);
