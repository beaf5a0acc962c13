import assert from 'node:assert/strict';
import type { Exec } from '../../src/dataplane/exec.js';
import { parseTable } from '../../src/dataplane/nftables/json.js';
import { nftRulesetOf, type NftRuleset } from '../../src/dataplane/nftables/ruleset.js';
import {
  assertNoKilo,
  foreignRules,
  plantForeign,
  type FirewallView,
  type IptablesAccess,
} from './firewall-contract.js';

/** Sets and chains by name: nft lists them in the order they were created. */
const sorted = (r: NftRuleset): NftRuleset => ({
  sets: [...r.sets].sort((a, b) => (a.name < b.name ? -1 : 1)),
  chains: [...r.chains].sort((a, b) => (a.name < b.name ? -1 : 1)),
});

/** `nft -j list table` of one table. */
async function listed(exec: Exec, family: string, table: string): Promise<string | null> {
  try {
    return (await exec.run(['nft', '-j', 'list', 'table', family, table])).stdout;
  } catch (e) {
    if (/No such file or directory/.test(String((e as Error).message))) return null;
    throw e;
  }
}

/** A listing without its handles, which change with every write to the table. */
const withoutHandles = (text: string | null): unknown =>
  text === null ? null : JSON.parse(text, (k, v: unknown) => (k === 'handle' ? undefined : v));

/**
 * The nftables backend's view: Kilo's table `inet kilo` holds exactly nftables/ruleset.ts's
 * rendering of the plan, and iptables holds nothing of Kilo's (no filter policy drops here).
 * `exec` runs nft and iptables on the harness's machine, uncounted.
 */
export function nftablesView(exec: Exec, ipt: IptablesAccess): FirewallView {
  const kilo = () => listed(exec, 'inet', 'kilo');
  const script = (text: string) => exec.run(['nft', '-f', '-'], { input: text });
  return {
    assertExact: async (intent) => {
      const text = await kilo();
      assert.ok(text !== null, 'table inet kilo exists');
      const read = parseTable(text);
      assert.equal(read.foreign, null);
      assert.deepEqual(sorted(read.ruleset), sorted(nftRulesetOf(intent)));
      // Independent of the parser: each of the plan's masqueraded Peers is an element, as nft lists it.
      for (const c of intent.masquerade.peerAllowedIPs) {
        const [addr, len] = c.split('/');
        const host = len === (c.includes(':') ? '128' : '32');
        assert.ok(
          host ? text.includes(`"${addr}"`) : text.includes(`"addr": "${addr}", "len": ${len}`),
          `${c} is an element`,
        );
      }
      await assertNoKilo(ipt);
    },
    assertNoKilo: async () => {
      assert.equal(await kilo(), null, 'no table inet kilo');
      await assertNoKilo(ipt);
    },
    plantForeign: async () => {
      await script(
        [
          'add table inet other',
          'add set inet other peers { type ipv4_addr; flags interval; }',
          'add element inet other peers { 198.18.0.0/24 }',
          'add chain inet other forward { type filter hook forward priority filter; policy accept; }',
          'add rule inet other forward ip saddr @peers accept comment "not Kilo"',
          'add table ip kilo',
          'add chain ip kilo postrouting { type nat hook postrouting priority srcnat; policy accept; }',
          'add rule ip kilo postrouting ip saddr 198.18.1.0/24 masquerade',
          '',
        ].join('\n'),
      );
      await plantForeign(ipt);
    },
    foreign: async () => ({
      other: withoutHandles(await listed(exec, 'inet', 'other')),
      ipKilo: withoutHandles(await listed(exec, 'ip', 'kilo')),
      iptables: await foreignRules(ipt),
    }),
    deleteKiloRule: async () => {
      const text = (await exec.run(['nft', '-j', 'list', 'table', 'inet', 'kilo'])).stdout;
      const rule = (JSON.parse(text) as { nftables: { rule?: { chain: string; handle: number } }[] }).nftables.find(
        (i) => i.rule?.chain === 'postrouting',
      )!.rule!;
      await script(`delete rule inet kilo postrouting handle ${rule.handle}\n`);
    },
  };
}
