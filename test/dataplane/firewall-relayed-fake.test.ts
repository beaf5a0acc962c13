import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FakeNetfilter } from '../../src/dataplane/iptables/fake.js';
import { LinuxFirewallTables } from '../../src/dataplane/iptables/tables.js';
import { FakeNftables, fakeNetfilterExec } from '../../src/dataplane/nftables/fake.js';
import { LinuxNftablesTables } from '../../src/dataplane/nftables/tables.js';
import type { FirewallTables } from '../../src/dataplane/types.js';
import type { Firewall } from '../../src/mesh/types.js';
import { planA } from './firewall-plans.js';

/**
 * The relayed-traffic counter (Firewall.countRelayed) on the in-memory netfilters, both backends:
 * it counts kilo0 → kilo0 only, keeps counting while the rest of the firewall changes, and goes
 * with the relaying. The kernel's side: firewall-relayed-real.test.ts.
 */
interface Harness {
  tables: FirewallTables;
  /** Packets forwarded from `iif` to `oif` through the fake netfilter. */
  forward(iif: string, oif: string, packets: number, bytes: number): void;
}

const harnesses: Record<string, () => Harness> = {
  iptables: () => {
    const netfilter = new FakeNetfilter('nft');
    return {
      tables: new LinuxFirewallTables(netfilter.exec(), { kiloInterface: 'wg7' }),
      forward: (iif, oif, p, b) => {
        // One packet of each family: both are counted, and summed.
        netfilter.forward(4, iif, oif, p - 1, b - 100);
        netfilter.forward(6, iif, oif, 1, 100);
      },
    };
  },
  nftables: () => {
    const nft = new FakeNftables();
    const exec = fakeNetfilterExec(nft, new FakeNetfilter('nft'));
    return {
      tables: new LinuxNftablesTables(exec, { kiloInterface: 'wg7' }),
      forward: (iif, oif, p, b) => nft.forward(iif, oif, p, b),
    };
  },
};

const relaying = (fw: Firewall = planA()): Firewall => ({ ...fw, countRelayed: true });

for (const [name, make] of Object.entries(harnesses)) {
  describe(`relayed traffic counter: ${name} over an in-memory netfilter`, () => {
    test('counts what goes from the WireGuard interface back into it, nothing else', async () => {
      const h = make();
      assert.equal(await h.tables.readRelayed(), null, 'no rule before the plan has one');
      await h.tables.reconcile(relaying());
      assert.deepEqual(await h.tables.readRelayed(), { packets: 0, bytes: 0 });
      h.forward('wg7', 'wg7', 10, 10_280);
      h.forward('wg7', 'eth0', 5, 500);
      h.forward('eth0', 'wg7', 5, 500);
      h.forward('kilo0', 'kilo0', 5, 500);
      assert.deepEqual(await h.tables.readRelayed(), { packets: 10, bytes: 10_280 });
    });

    test('keeps its figures while the rest of the firewall changes; gone with the relaying and on clean-up', async () => {
      const h = make();
      await h.tables.reconcile(relaying());
      h.forward('wg7', 'wg7', 3, 300);
      // Another FORWARD accept in front of the others, another masquerade: the counter stays.
      const changed = relaying({ ...planA(), forwardPodCIDRs: [...planA().forwardPodCIDRs, '10.42.9.0/24'] });
      assert.ok((await h.tables.reconcile(changed)).writes > 0);
      assert.deepEqual(await h.tables.readRelayed(), { packets: 3, bytes: 300 });
      assert.deepEqual(await h.tables.reconcile(changed), { writes: 0, details: [] }, 'counting is no change');
      await h.tables.reconcile(planA());
      assert.equal(await h.tables.readRelayed(), null, 'not relaying: no rule');
      await h.tables.reconcile(relaying());
      assert.deepEqual(await h.tables.readRelayed(), { packets: 0, bytes: 0 }, 'made again: from 0');
      await h.tables.cleanup();
      assert.equal(await h.tables.readRelayed(), null);
    });
  });
}
