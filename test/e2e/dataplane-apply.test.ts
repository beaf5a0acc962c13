/**
 * `kg apply` end to end: the built CLI in two network namespaces that really talk over
 * wireguard-go. Plan A is read back exactly from the kernel; plan B (a node gone, a Peer added)
 * changes only the difference, and the WireGuard session that did not change survives it.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import type { Plan } from '../../src/mesh/types.js';
import type { KubeObject } from '../../src/model/parse.js';
import { peer } from '../helpers/cluster.js';
import { skipNoNetns, type TestNamespace } from '../helpers/netns.js';
import {
  Lab,
  assertKernelIs,
  expectedKernel,
  oraclePlan,
  privateInterface,
  type ApplyRun,
  type LabNode,
  twoLocationNodes,
} from './dataplane-lab.js';
import { iptablesRulesOf } from '../../src/dataplane/iptables/rules.js';

const mesh = ['--mesh-granularity', 'cross', '--encapsulate', 'never'];

/**
 * Two locations of two nodes; eu-1 and us-1 are run, eu-2 and us-2 exist only in the snapshot.
 * B drops us-2 (it sorts last, so no WireGuard IP moves) and adds the Peer phone.
 */
function cluster(eu1: LabNode, us1: LabNode, variant: 'A' | 'B'): KubeObject[] {
  return [
    ...twoLocationNodes({ eu1: eu1.publicKey, us1: us1.publicKey }, { us2: variant === 'A' }),
    peer('laptop', { allowedIPs: ['10.5.0.1/32'], endpoint: '203.0.113.5:51820' }),
    ...(variant === 'B' ? [peer('phone', { allowedIPs: ['10.5.0.2/32', '10.5.1.0/24'], keepalive: 25 })] : []),
  ];
}

function handshakeWith(ns: TestNamespace, publicKey: string): number {
  const line = ns
    .sh('wg show kilo0 latest-handshakes')
    .split('\n')
    .find((l) => l.startsWith(`${publicKey}\t`));
  assert.ok(line, `${ns.name} has a peer ${publicKey}`);
  return Number(line.split('\t')[1]);
}

function ping(ns: TestNamespace, ip: string): void {
  // The first packet waits for the handshake; retries absorb a slow, loaded machine.
  ns.sh(`ping -c 1 -W 3 ${ip} >/dev/null || ping -c 1 -W 3 ${ip} >/dev/null || ping -c 2 -W 3 ${ip} >/dev/null`);
}

/** Writes a reconcile from plan A to plan B must cost, derived from the two oracle plans alone. */
function expectedWrites(a: Plan, b: Plan, devices: { kilo: string; private: string }) {
  const ma = expectedKernel(a, { ...devices, tunnel: null }, '');
  const mb = expectedKernel(b, { ...devices, tunnel: null }, '');
  // A route is keyed by table and destination: the same key with other content is one replace. The
  // fail-closed guard's blackhole at a destination is a route of its own (another metric).
  const key = (r: string) => `${/ table (\S+)/.exec(r)![1]} ${/^(blackhole )?\S+/.exec(r)![0]}`;
  const ka = new Map(ma.routes.map((r) => [key(r), r]));
  const kb = new Map(mb.routes.map((r) => [key(r), r]));
  let routes = 0;
  for (const [k, r] of ka) if (kb.get(k) !== r) routes++;
  for (const k of kb.keys()) if (!ka.has(k)) routes++;
  routes += ma.rules.filter((r) => !mb.rules.includes(r)).length + mb.rules.filter((r) => !ma.rules.includes(r)).length;
  // A Kilo chain is edited rule by rule (a write per rule in or out) when fewer rules change than
  // it will hold, else replaced whole (one write); jumps in built-in chains are edited one by one.
  const chainOf = (m: string[], c: string) => m.filter((l) => l.startsWith(`${c}:`));
  const chains = new Set(
    [...ma.firewall, ...mb.firewall].flatMap((l) =>
      /^\d \S+ KILO-[^:]*:/.test(l) ? [l.slice(0, l.indexOf(':'))] : [],
    ),
  );
  let firewall = 0;
  for (const c of chains) {
    const [ra, rb] = [chainOf(ma.firewall, c), chainOf(mb.firewall, c)];
    // The plan keeps the order of the rules both have, so the edit is the symmetric difference.
    const edits = ra.filter((l) => !rb.includes(l)).length + rb.filter((l) => !ra.includes(l)).length;
    firewall += edits === 0 ? 0 : edits < rb.length ? edits : 1;
  }
  const jumps = (m: string[]) => m.filter((l) => !/^\d \S+ KILO-/.test(l) && !/ chain /.test(l));
  const ja = jumps(ma.firewall);
  const jb = jumps(mb.firewall);
  firewall += ja.filter((l) => !jb.includes(l)).length + jb.filter((l) => !ja.includes(l)).length;
  return { routes, firewall };
}

function assertClean(run: ApplyRun, what: string): void {
  assert.equal(run.status, 0, `${what}: kg apply exits 0\n${run.stderr}`);
  assert.deepEqual(run.errors, [], `${what}: no errors logged`);
  assert.ok(run.applied, `${what}: kg apply logged "applied"\n${run.stderr}`);
}

test(
  'kg apply: plan A read back exactly, plan B changes only the difference and keeps the live session',
  { skip: skipNoNetns },
  async (t) => {
    const lab = new Lab();
    t.after(() => lab.destroy());
    const eu1 = lab.node('eu-1');
    const us1 = lab.node('us-1');
    // pub0: the "internet" between the two nodes; lan0: each node's private NIC with its internal IP.
    eu1.ns.sh(`ip link add pub0 type veth peer name pub0 netns ${us1.ns.name}`);
    eu1.ns.sh('ip addr add 172.30.0.1/24 dev pub0 && ip link set pub0 up');
    us1.ns.sh('ip addr add 172.30.0.3/24 dev pub0 && ip link set pub0 up');
    privateInterface(eu1.ns, 'lan0', '192.168.10.1/24');
    privateInterface(us1.ns, 'lan0', '192.168.20.1/24');
    const devices = { kilo: 'kilo0', private: 'lan0', tunnel: null };

    const fileA = lab.writeCluster(cluster(eu1, us1, 'A'));
    const fileB = lab.writeCluster(cluster(eu1, us1, 'B'));
    const planA = oraclePlan(fileA, 'eu-1', mesh);
    const planB = oraclePlan(fileB, 'eu-1', mesh);
    const planUs = oraclePlan(fileA, 'us-1', mesh);
    // The cluster must exercise every part: peers, in-group routes over lan0, routes over kilo0, NAT.
    assert.deepEqual(planA.peers.map((p) => p.names.join('+')).sort(), ['laptop', 'us-1', 'us-2']);
    assert.ok(planA.routes.some((r) => r.dev === 'private') && planA.routes.some((r) => r.dev === 'kilo'));
    assert.ok(iptablesRulesOf(planA.firewall).rules.length > 0);

    await t.test(
      'plan A on a fresh namespace: peers, address, routes, rules and firewall are exactly the plan',
      async () => {
        const run = await lab.apply(eu1, fileA, mesh);
        assertClean(run, 'apply A');
        assertKernelIs(eu1.ns, planA, devices, eu1.publicKey, 'after A');
        const a = run.applied!;
        assert.equal(a.links, 3, 'links: address, MTU (1380, wireguard-go starts at 1420) and up');
        assert.equal(
          a.writes,
          a.wireGuard!.added.length + a.routes! + a.firewall! + 3,
          'writes are the sum of the parts',
        );
        assert.deepEqual(run.applied!.wireGuard!.added.sort(), planA.peers.map((p) => p.publicKey).sort());
      },
    );

    await t.test('the same plan again costs zero writes', async () => {
      const run = await lab.apply(eu1, fileA, mesh);
      assertClean(run, 're-apply A');
      assert.equal(run.applied!.writes, 0);
    });

    const us1Key = planA.peers.find((p) => p.names[0] === 'us-1')!.publicKey;
    const us1IP = planUs.wireGuardIP!.split('/')[0]!;
    const eu1IP = planA.wireGuardIP!.split('/')[0]!;

    await t.test('eu-1 and us-1 talk over wireguard-go', async () => {
      assertClean(await lab.apply(us1, fileA, mesh), 'apply A on us-1');
      assertKernelIs(us1.ns, planUs, devices, us1.publicKey, 'us-1 after A');
      ping(eu1.ns, us1IP);
      assert.ok(handshakeWith(eu1.ns, us1Key) > 0, 'the ping made a handshake');
    });

    await t.test('plan B: only the difference is written, the unchanged peer keeps its handshake', async () => {
      const before = handshakeWith(eu1.ns, us1Key);
      // A new handshake would carry a later second: wait so that "unchanged" cannot be a coincidence.
      await new Promise((r) => setTimeout(r, 1100));
      const run = await lab.apply(eu1, fileB, mesh);
      assertClean(run, 'apply B');
      assertKernelIs(eu1.ns, planB, devices, eu1.publicKey, 'after B');

      const key = (name: string, plan: Plan) => plan.peers.find((p) => p.names.includes(name))!.publicKey;
      assert.deepEqual(run.applied!.wireGuard, {
        added: [key('phone', planB)],
        removed: [key('us-2', planA)],
        updated: [],
      });
      const want = expectedWrites(planA, planB, devices);
      assert.ok(want.routes > 0 && want.firewall > 0, 'the change touches routes and firewall');
      assert.equal(run.applied!.routes, want.routes, 'route and rule writes = the routes that differ between A and B');
      assert.equal(run.applied!.firewall, want.firewall, 'firewall writes = the Kilo chains and jumps that differ');
      assert.equal(run.applied!.links, 0);
      assert.equal(run.applied!.writes, 2 + want.routes + want.firewall, 'nothing else was written');

      assert.equal(handshakeWith(eu1.ns, us1Key), before, 'the session with us-1 was not reset');
      ping(eu1.ns, us1IP);
      ping(us1.ns, eu1IP);
      assert.equal(handshakeWith(eu1.ns, us1Key), before, 'traffic still flows on the old session');
    });

    await t.test("no private key appears in kg apply's output", async () => {
      const run = await lab.apply(eu1, fileB, [...mesh, '--log-level', 'debug']);
      assertClean(run, 're-apply B');
      assert.equal(run.applied!.writes, 0);
      const privateKey = readFileSync(eu1.keyFile, 'utf8').trim();
      assert.ok(!run.stderr.includes(privateKey));
    });
  },
);
