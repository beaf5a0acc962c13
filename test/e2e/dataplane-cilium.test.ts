/**
 * --compatibility=cilium on a real (namespaced) machine. Cilium itself cannot run here, and these
 * kernels have no ipip module, so its devices are stood in for by veths of the same names:
 * `cilium_host` holding the node's Cilium internal IP and `cilium_tunl` as the IPIP tunnel Cilium
 * made (a veth routes like any device; only the encapsulation is missing). What is checked is
 * what kilo-ts does with them: it finds and publishes the address, brings cilium_tunl up, routes
 * through it to the leader's Cilium internal IP, and names each route when no tunnel exists; and
 * with --firewall=nftables, the same firewall in Kilo's nftables table.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { LinuxHost } from '../../src/dataplane/host/linux.js';
import { nftRulesetOf, type NftRuleset } from '../../src/dataplane/nftables/ruleset.js';
import { readKiloTable } from '../../src/dataplane/nftables/tables.js';
import { ciliumHostIP, ciliumTunnel } from '../../src/encapsulation/cilium.js';
import { encapsulationOf } from '../../src/encapsulation/index.js';
import type { Plan } from '../../src/mesh/types.js';
import { Annotation } from '../../src/model/annotations.js';
import type { KubeObject } from '../../src/model/parse.js';
import { planFor, wgKey } from '../helpers/cluster.js';
import { skipNoNetns, type TestNamespace } from '../helpers/netns.js';
import { settled, startHarness } from '../agent/agent-harness.js';
import {
  Lab,
  assertKernelIs,
  privateInterface,
  readKernel,
  twoLocationNodes,
  until,
  type LabNode,
} from './dataplane-lab.js';

const flags = ['--compatibility', 'cilium', '--mesh-granularity', 'location', '--encapsulate', 'crosssubnet'];
const options = {
  compatibility: 'cilium' as const,
  local: false,
  granularity: 'location' as const,
  encapsulate: 'crosssubnet' as const,
};

/** eu-1 leads eu; eu-2 (the node under test) follows it; both published their Cilium internal IPs. */
function cluster(eu2: LabNode): KubeObject[] {
  const cilium: Record<string, string> = { 'eu-1': '10.42.1.180', 'eu-2': '10.42.2.180' };
  return twoLocationNodes({ eu1: wgKey('eu-1'), us1: wgKey('us-1') }).map((o) => {
    const name = o.metadata!.name!;
    const annotations = { ...o.metadata!.annotations };
    if (cilium[name]) annotations[Annotation.ciliumInternalIP] = cilium[name];
    if (name === 'eu-1') annotations[Annotation.leader] = 'true';
    if (name === 'eu-2') annotations[Annotation.key] = eu2.publicKey;
    return { ...o, metadata: { ...o.metadata, annotations } };
  });
}

/** A veth pair `name`/`name`p in the namespace; `address` on the first end; both left down. */
function veth(ns: TestNamespace, name: string, address?: string): void {
  ns.sh(`ip link add ${name} type veth peer name ${name}p${address ? ` && ip addr add ${address} dev ${name}` : ''}`);
}

const isUp = (ns: TestNamespace, dev: string) =>
  (JSON.parse(ns.sh(`ip -j link show dev ${dev}`)) as { flags: string[] }[])[0]!.flags.includes('UP');
const hasLink = (ns: TestNamespace, dev: string) =>
  spawnSync('ip', ['-n', ns.name, 'link', 'show', 'dev', dev]).status === 0;

test('--compatibility=cilium on a namespaced node', { skip: skipNoNetns }, async (t) => {
  const lab = new Lab();
  t.after(() => lab.destroy());
  const eu2 = lab.node('eu-2');
  privateInterface(eu2.ns, 'lan0', '192.168.10.2/24');

  await t.test("the Cilium internal IP is cilium_host's IPv4 address; none without cilium_host", async () => {
    assert.equal(await ciliumHostIP(new LinuxHost(eu2.ns.exec)), null);
    veth(eu2.ns, 'cilium_host', '10.42.2.180/32');
    eu2.ns.sh('ip addr add fd00:42:2::180/128 dev cilium_host && ip link set cilium_host up');
    assert.equal((await ciliumHostIP(new LinuxHost(eu2.ns.exec)))?.text, '10.42.2.180');
  });

  await t.test('the agent publishes the address it finds on cilium_host', async (st) => {
    const h = await startHarness(st, {
      mesh: options,
      deps: {
        encapsulationDevice: {
          ...encapsulationOf(options).device,
          setUp: async () => ({ tunnel: 'tunl0' }),
          ownAddress: () => ciliumHostIP(new LinuxHost(eu2.ns.exec)),
        },
      },
    });
    await settled(h);
    assert.equal(h.api.node('a')?.metadata?.annotations?.[Annotation.ciliumInternalIP], '10.42.2.180');
  });

  const file = lab.writeCluster(cluster(eu2));
  const plan: Plan = planFor(cluster(eu2), 'eu-2', options);
  const tunnelRoutes = plan.routes.filter((r) => r.dev === 'tunnel');
  assert.ok(
    tunnelRoutes.length > 0 && tunnelRoutes.length === plan.routes.length,
    'a follower routes everything through the tunnel',
  );
  assert.ok(
    tunnelRoutes.every((r) => r.gw === '10.42.1.180'),
    "to the leader's Cilium internal IP",
  );

  await t.test(
    "kg apply brings Cilium's cilium_tunl up and routes through it to the leader's Cilium internal IP",
    async () => {
      veth(eu2.ns, 'cilium_tunl');
      eu2.ns.sh('ip link set cilium_tunlp up');
      assert.equal(isUp(eu2.ns, 'cilium_tunl'), false);
      const run = await lab.apply(eu2, file, flags);
      assert.equal(run.status, 0, run.stderr);
      assert.deepEqual(run.errors, []);
      assert.equal(isUp(eu2.ns, 'cilium_tunl'), true, 'cilium_tunl was set up');
      const kernel = assertKernelIs(
        eu2.ns,
        plan,
        { kilo: 'kilo0', private: 'lan0', tunnel: 'cilium_tunl' },
        eu2.publicKey,
        'cilium_tunl',
      );
      assert.ok(
        kernel.routes.includes('10.42.3.0/24 via 10.42.1.180 dev cilium_tunl table main onlink'),
        kernel.routes.join('\n'),
      );
      assert.ok(
        kernel.firewall.some((l) => l.includes('KILO-IPIP') && l.includes('-s 10.42.1.180/32')),
        kernel.firewall.join('\n'),
      );
    },
  );

  await t.test(
    "--firewall=nftables: Kilo's table holds the plan's rendering, IPIP from the leader's Cilium internal IP accepted, nothing of Kilo's in iptables; and back",
    async () => {
      const run = await lab.apply(eu2, file, [...flags, '--firewall=nftables']);
      assert.equal(run.status, 0, run.stderr);
      assert.deepEqual(run.errors, []);
      const table = await readKiloTable(eu2.ns.exec);
      assert.ok(table, 'table inet kilo exists');
      const byName = (r: NftRuleset): NftRuleset => ({
        sets: [...r.sets].sort((a, b) => (a.name < b.name ? -1 : 1)),
        chains: [...r.chains].sort((a, b) => (a.name < b.name ? -1 : 1)),
      });
      assert.deepEqual(byName(table), byName(nftRulesetOf(plan.firewall)));
      assert.ok(
        table.sets.find((s) => s.name === 'ipip-sources-v4')?.elements.includes('10.42.1.180/32'),
        JSON.stringify(table.sets),
      );
      const kernel = readKernel(eu2.ns);
      assert.deepEqual(kernel.firewall, [], "nothing of Kilo's in iptables");
      assert.ok(
        kernel.routes.includes('10.42.3.0/24 via 10.42.1.180 dev cilium_tunl table main onlink'),
        kernel.routes.join('\n'),
      );
      // The later steps run with the default backend, auto, which keeps nftables once Kilo's table exists.
      const back = await lab.apply(eu2, file, [...flags, '--firewall=iptables']);
      assert.equal(back.status, 0, back.stderr);
      assert.equal(await readKiloTable(eu2.ns.exec), null, 'table inet kilo removed');
      assertKernelIs(
        eu2.ns,
        plan,
        { kilo: 'kilo0', private: 'lan0', tunnel: 'cilium_tunl' },
        eu2.publicKey,
        'back to iptables',
      );
    },
  );

  await t.test("clean-up on SIGTERM removes Kilo's routes and leaves cilium_tunl alone: it is Cilium's", async () => {
    const watching = lab.start(eu2, file, [...flags, '--watch']);
    await until('kg apply --watch applied', () => watching.stderr().includes('"msg":"applied"'));
    watching.child.kill('SIGTERM');
    const run = await watching.done;
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(readKernel(eu2.ns).routes, [], 'routes cleaned up');
    assert.ok(hasLink(eu2.ns, 'cilium_tunl') && isUp(eu2.ns, 'cilium_tunl'), 'cilium_tunl is still there and up');
  });

  await t.test(
    'without cilium_tunl and tunl0, each tunnel route is named with the reason; the next run with a tunnel converges',
    async () => {
      eu2.ns.sh('ip link del cilium_tunl');
      const run = await lab.apply(eu2, file, flags);
      if (hasLink(eu2.ns, 'tunl0')) {
        // A kernel with the ipip module: tunl0 is the tunnel, as in Kilo without enable-ipip-termination.
        assert.equal(run.status, 0, run.stderr);
        assertKernelIs(eu2.ns, plan, { kilo: 'kilo0', private: 'lan0', tunnel: 'tunl0' }, eu2.publicKey, 'tunl0');
        return;
      }
      assert.equal(run.status, 1, run.stderr);
      const named = run.errors.filter((e) => e.startsWith('not applied: '));
      for (const r of tunnelRoutes) {
        const line = named.find((e) => e.includes(`route ${r.dst} via ${r.gw} dev `));
        assert.ok(line, `an error names route ${r.dst}:\n${run.errors.join('\n')}`);
        assert.match(line, /IPIP tunnel has no interface/);
      }
      assert.equal(named.length, tunnelRoutes.length, run.errors.join('\n'));

      veth(eu2.ns, 'cilium_tunl');
      eu2.ns.sh('ip link set cilium_tunlp up');
      const again = await lab.apply(eu2, file, flags);
      assert.equal(again.status, 0, again.stderr);
      assertKernelIs(
        eu2.ns,
        plan,
        { kilo: 'kilo0', private: 'lan0', tunnel: 'cilium_tunl' },
        eu2.publicKey,
        'converged',
      );
    },
  );

  await t.test('the tunnel lookup: cilium_tunl first, else tunl0 when the kernel has it', async () => {
    assert.equal(await ciliumTunnel(new LinuxHost(eu2.ns.exec)), 'cilium_tunl');
    eu2.ns.sh('ip link del cilium_tunl');
    assert.equal(await ciliumTunnel(new LinuxHost(eu2.ns.exec)), hasLink(eu2.ns, 'tunl0') ? 'tunl0' : null);
  });
});
