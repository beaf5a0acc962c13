import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { Exec } from '../../src/dataplane/exec.js';
import { LinuxFirewallTables } from '../../src/dataplane/iptables/tables.js';
import { chooseFirewall, FirewallUnavailableError, retiringNftables } from '../../src/dataplane/nftables/choice.js';
import { parseTable } from '../../src/dataplane/nftables/json.js';
import { nftRulesetOf, type NftRuleset } from '../../src/dataplane/nftables/ruleset.js';
import {
  ForeignTableError,
  LinuxNftablesTables,
  NftablesUnavailableError,
} from '../../src/dataplane/nftables/tables.js';
import { assertNoKilo, iptablesView, type IptablesAccess } from './firewall-contract.js';
import { nftablesView } from './firewall-nftables-view.js';
import { planA, planB } from './firewall-plans.js';

/** One machine (a namespace or the fakes) for the hosts tests: `exec` runs nft and iptables on it. */
export interface HostHarness {
  exec: Exec;
  ipt: IptablesAccess;
  /** An Exec on the same machine where `nft` cannot run: its binary is missing. */
  withoutNft: Exec;
  destroy(): void;
}

const sorted = (r: NftRuleset): NftRuleset => ({
  sets: [...r.sets].sort((a, b) => (a.name < b.name ? -1 : 1)),
  chains: [...r.chains].sort((a, b) => (a.name < b.name ? -1 : 1)),
});

async function kiloTable(exec: Exec): Promise<string | null> {
  try {
    return (await exec.run(['nft', '-j', 'list', 'table', 'inet', 'kilo'])).stdout;
  } catch (e) {
    if (/No such file or directory/.test(String((e as Error).message))) return null;
    throw e;
  }
}

/** Every iptables table Kilo could touch, both families: what "nothing written" compares. */
async function iptablesDump(ipt: IptablesAccess): Promise<string> {
  const out: string[] = [];
  for (const f of [4, 6] as const)
    for (const t of ['nat', 'filter'] as const)
      out.push((await ipt.save(f, t)).replace(/^#.*$/gm, '').replace(/\[\d+:\d+\]/g, ''));
  return out.join('\n');
}

/** Kilo's FORWARD accepts, as iptables-save prints them, for a plan's forwarded pod CIDRs. */
function forwardAccepts(dump: string): string[] {
  return dump
    .split('\n')
    .filter((l) => l.startsWith('-A FORWARD') && l.includes('Kilo: forward packets') && l.endsWith('-j ACCEPT'));
}

/**
 * Hosts the nftables backend meets besides a clean one: Docker's FORWARD policy DROP, a foreign
 * `inet kilo`, no nft; and a node switching between the backends. The same tests for the fakes
 * and for a namespace.
 */
export function nftablesHostsSuite(name: string, harness: () => HostHarness, skip: string | false = false) {
  const options = { skip };
  const open = (t: TestContext): HostHarness => {
    const h = harness();
    t.after(() => h.destroy());
    return h;
  };

  test(
    `${name}: with iptables' FORWARD policy DROP (Docker), Kilo's forward accepts also go into iptables; gone when the policy is back`,
    options,
    async (t) => {
      const h = open(t);
      await h.ipt.iptables(4, ['-P', 'FORWARD', 'DROP']);
      const tables = new LinuxNftablesTables(h.exec);
      await tables.reconcile(planA());
      const accepts = forwardAccepts(await h.ipt.save(4, 'filter'));
      for (const c of planA().forwardPodCIDRs) {
        assert.ok(
          accepts.some((l) => l.includes(`-s ${c} `)),
          `FORWARD accepts from ${c}`,
        );
        assert.ok(
          accepts.some((l) => l.includes(`-d ${c} `)),
          `FORWARD accepts to ${c}`,
        );
      }
      assert.equal(accepts.length, 2 * planA().forwardPodCIDRs.length);
      assert.deepEqual(forwardAccepts(await h.ipt.save(6, 'filter')), [], 'IPv6 FORWARD does not drop: nothing there');
      const table = await kiloTable(h.exec);
      assert.ok(table !== null);
      assert.deepEqual(sorted(parseTable(table).ruleset), sorted(nftRulesetOf(planA())));
      assert.deepEqual(await tables.reconcile(planA()), { writes: 0, details: [] }, 'unchanged: nothing to do');
      // Plan B forwards one pod CIDR fewer: so does iptables.
      await tables.reconcile(planB());
      assert.equal(forwardAccepts(await h.ipt.save(4, 'filter')).length, 2 * planB().forwardPodCIDRs.length);
      await h.ipt.iptables(4, ['-P', 'FORWARD', 'ACCEPT']);
      await tables.reconcile(planB());
      await nftablesView(h.exec, h.ipt).assertExact(planB());
      await h.ipt.iptables(4, ['-P', 'FORWARD', 'DROP']);
      await tables.reconcile(planB());
      assert.equal(forwardAccepts(await h.ipt.save(4, 'filter')).length, 2 * planB().forwardPodCIDRs.length);
      await tables.cleanup();
      assert.equal(await kiloTable(h.exec), null);
      await assertNoKilo(h.ipt);
    },
  );

  test(
    `${name}: a foreign table inet kilo: one clear error at the choice and at a reconcile, nothing written anywhere`,
    options,
    async (t) => {
      const h = open(t);
      await h.ipt.iptables(4, ['-P', 'FORWARD', 'DROP']);
      await h.exec.run(['nft', '-f', '-'], {
        input: [
          'add table inet kilo',
          'add chain inet kilo forward { type filter hook forward priority filter; policy accept; }',
          'add rule inet kilo forward ip saddr 198.18.0.0/24 accept comment "someone else\'s"',
          '',
        ].join('\n'),
      });
      const before = { table: await kiloTable(h.exec), iptables: await iptablesDump(h.ipt) };
      await assert.rejects(chooseFirewall(h.exec, 'nftables'), (e: Error) => {
        assert.ok(e instanceof FirewallUnavailableError);
        assert.match(e.message, /inet kilo is not Kilo's .*--firewall=iptables/);
        return true;
      });
      const auto = await chooseFirewall(h.exec, 'auto');
      assert.equal(auto.backend, 'iptables', 'auto does not take a table that is not Kilo’s');
      assert.equal(auto.nftablesInUse, false, 'nor would the iptables backend remove it');
      await assert.rejects(new LinuxNftablesTables(h.exec).reconcile(planA()), ForeignTableError);
      assert.deepEqual({ table: await kiloTable(h.exec), iptables: await iptablesDump(h.ipt) }, before);
    },
  );

  test(`${name}: no nft binary: one clear error, auto takes iptables, nothing written`, options, async (t) => {
    const h = open(t);
    await h.ipt.iptables(4, ['-P', 'FORWARD', 'DROP']);
    const before = await iptablesDump(h.ipt);
    await assert.rejects(chooseFirewall(h.withoutNft, 'nftables'), (e: Error) => {
      assert.ok(e instanceof FirewallUnavailableError);
      assert.match(e.message, /nft command is not installed.*--firewall=iptables/);
      return true;
    });
    assert.equal((await chooseFirewall(h.withoutNft, 'auto')).backend, 'iptables');
    await assert.rejects(new LinuxNftablesTables(h.withoutNft).reconcile(planA()), NftablesUnavailableError);
    assert.equal(await iptablesDump(h.ipt), before);
  });

  test(
    `${name}: iptables to nftables: Kilo's iptables chains and jumps are gone at the first nftables pass`,
    options,
    async (t) => {
      const h = open(t);
      await new LinuxFirewallTables(h.exec).reconcile(planA());
      await iptablesView(h.ipt).assertExact(planA());
      assert.equal((await chooseFirewall(h.exec, 'auto')).backend, 'iptables', 'auto keeps a node on iptables');
      const choice = await chooseFirewall(h.exec, 'nftables');
      assert.equal(choice.backend, 'nftables');
      await new LinuxNftablesTables(h.exec).reconcile(planA());
      await nftablesView(h.exec, h.ipt).assertExact(planA());
      assert.equal((await chooseFirewall(h.exec, 'auto')).backend, 'nftables', 'auto then keeps nftables');
    },
  );

  test(
    `${name}: nftables to iptables: Kilo's table is removed whole after the first iptables write`,
    options,
    async (t) => {
      const h = open(t);
      await new LinuxNftablesTables(h.exec).reconcile(planA());
      const choice = await chooseFirewall(h.exec, 'iptables');
      assert.equal(choice.nftablesInUse, true);
      const tables = retiringNftables(new LinuxFirewallTables(h.exec), h.exec);
      const ops = await tables.reconcile(planA());
      assert.ok(ops.details.includes('nftables: remove table inet kilo'), ops.details.join('\n'));
      assert.equal(await kiloTable(h.exec), null);
      await iptablesView(h.ipt).assertExact(planA());
      assert.deepEqual(await tables.reconcile(planA()), { writes: 0, details: [] });
      assert.equal((await chooseFirewall(h.exec, 'auto')).backend, 'iptables');
    },
  );
}
