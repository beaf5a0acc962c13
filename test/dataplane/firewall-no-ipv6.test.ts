/**
 * A host without IPv6 netfilter (ipv6.disable=1, no ip6_tables modules, a kernel without nf_tables
 * IPv6): the IPv4 firewall is applied all the same; a plan whose IPv6 part names no IPv6 address
 * leaves IPv6 out without an error, one that does fails naming IPv6 and its rules. The hosts are
 * the in-memory netfilter behind an Exec that fails ip6tables-* the way iptables 1.8.9 does there.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ExecError, type Exec } from '../../src/dataplane/exec.js';
import { FakeNetfilter } from '../../src/dataplane/iptables/fake.js';
import { ipv6Demand, ipv6Unusable } from '../../src/dataplane/iptables/ipv6.js';
import {
  IPv6UnavailableError,
  LinuxFirewallTables,
  type IptablesBackend,
} from '../../src/dataplane/iptables/tables.js';
import { reconcile, type Dataplane } from '../../src/dataplane/reconcile.js';
import { FakeLinks, FakeKernel, fakeRoutingTables } from '../../src/dataplane/routes/fake.js';
import type { FirewallWritten } from '../../src/dataplane/types.js';
import { FakeWireGuardDevice } from '../../src/dataplane/wireguard/fake.js';
import { iptablesRulesOf } from '../../src/dataplane/iptables/rules.js';
import { lastWrite } from './last-write.js';
import type { Firewall, Plan } from '../../src/mesh/types.js';
import { Cidr } from '../../src/net/cidr.js';
import { generatePrivateKey } from '../../src/wireguard/keys.js';
import { planFor, twoLocations } from '../helpers/cluster.js';
import { clusterObjects, firewallOf, planA } from './firewall-plans.js';

/** What iptables 1.8.9 prints on such hosts (legacy ones reproduced with socket()/getsockopt() failing). */
const said = {
  legacySaveNoAF: 'ip6tables-save v1.8.9 (legacy): Cannot initialize: Address family not supported by protocol\n',
  legacySaveNoTable:
    'ip6tables-save v1.8.9 (legacy): Cannot initialize: Table does not exist (do you need to insmod?)\n',
  legacyCommandNoAF:
    "ip6tables v1.8.9 (legacy): can't initialize ip6tables table `nat': Address family not supported by protocol\n" +
    'Perhaps ip6tables or your kernel needs to be upgraded.\n',
  legacyRestore:
    "ip6tables-restore v1.8.9 (legacy): ip6tables-restore: unable to initialize table 'nat'\n" +
    'Error occurred at line: 1\n' +
    "Try `ip6tables-restore -h' or 'ip6tables-restore --help' for more information.\n",
  nftRestoreNoAF:
    'ip6tables-nft-restore v1.8.9 (nf_tables): \nline 2: RULE_APPEND failed (Address family not supported by protocol): rule in chain KILO-NAT\n',
};

/**
 * How a host answers ip6tables-*: `ok` passes through to the in-memory netfilter; the others fail
 * as on a real host (legacy with ip6_tables not loaded: the save succeeds empty, the restore fails).
 */
type Ip6Host = 'ok' | 'ipv6.disable=1' | 'no modules' | 'nft without IPv6' | 'lock busy once';

interface Host {
  netfilter: FakeNetfilter;
  exec: Exec;
  /** Every argv run, in order. */
  runs: string[][];
  ip6: Ip6Host;
}

function host(
  ip6: Ip6Host,
  backend: IptablesBackend = ip6 === 'nft without IPv6' || ip6 === 'lock busy once' ? 'nft' : 'legacy',
): Host {
  const netfilter = new FakeNetfilter(backend);
  const inner = netfilter.exec();
  const h: Host = {
    netfilter,
    runs: [],
    ip6,
    exec: {
      ...inner,
      run: (argv, opts) => {
        h.runs.push([...argv]);
        const tool = argv[0] ?? '';
        if (!tool.startsWith('ip6tables') || argv.includes('-V')) return inner.run(argv, opts);
        const fail = (code: number, stderr: string) => Promise.reject(new ExecError(argv, code, '', stderr));
        const save = tool.endsWith('-save');
        switch (h.ip6) {
          case 'ok':
            return inner.run(argv, opts);
          case 'ipv6.disable=1':
            return save ? fail(1, said.legacySaveNoAF) : fail(2, said.legacyRestore);
          case 'no modules':
            return save ? Promise.resolve({ stdout: '', stderr: '' }) : fail(2, said.legacyRestore);
          case 'nft without IPv6':
            return save ? inner.run(argv, opts) : fail(4, said.nftRestoreNoAF);
          case 'lock busy once':
            h.ip6 = 'ok';
            return fail(
              4,
              'Another app is currently holding the xtables lock. Perhaps you want to use the -w option?\n',
            );
        }
      },
    },
  };
  return h;
}

const ip6Runs = (h: Host) => h.runs.filter((a) => a[0]!.startsWith('ip6tables') && !a.includes('-V')).length;
const dump = (n: FakeNetfilter, family: 4 | 6) => `${n.save(family, 'nat')}${n.save(family, 'filter')}`;

/** The tables a healthy host ends up with for `firewall`: what the broken one must equal in IPv4. */
async function reference(firewall: Firewall, backend: IptablesBackend): Promise<{ v4: string; v6: string }> {
  const h = host('ok', backend);
  await new LinuxFirewallTables(h.exec).reconcile(firewall);
  return { v4: dump(h.netfilter, 4), v6: dump(h.netfilter, 6) };
}

/** A cluster with no IPv6 address anywhere: IPv4 nodes, no Peer, an IPv4 service CIDR. */
const ipv4Only = (): Firewall =>
  firewallOf(
    clusterObjects().filter((o) => o.kind === 'Node'),
    { serviceCIDRs: [Cidr.parse('10.43.0.0/16')] },
  );

describe('which IPv6 rules need IPv6 netfilter', () => {
  test('an IPv4-only cluster: IPv6 holds only KILO-NAT, its MASQUERADE and the IPIP jump and drop, which name no address', () => {
    const fw = iptablesRulesOf(ipv4Only());
    const v6 = fw.rules.filter((r) => r.family === 6);
    assert.ok(v6.length >= 3, 'the plan still declares the IPv6 scaffolding');
    assert.ok(
      fw.chains.some((c) => c.family === 6 && c.name === 'KILO-IPIP'),
      'encapsulation is on: KILO-IPIP is in the plan',
    );
    assert.equal(ipv6Demand(fw), null);
  });

  test('an IPv6 allowed IP of a Peer makes the IPv6 part needed, naming the first rule with an IPv6 address', () => {
    const fw = iptablesRulesOf(planA());
    const demand = ipv6Demand(fw);
    assert.ok(demand);
    assert.equal(demand.rules, fw.rules.filter((r) => r.family === 6).length);
    assert.deepEqual(demand.first.args, ['-s', 'fd05::1/128', '-j', 'KILO-NAT']);
  });

  test('an IPv6 service CIDR alone makes it needed too (a cluster that configures IPv6)', () => {
    const fw = firewallOf(
      clusterObjects().filter((o) => o.kind === 'Node'),
      { serviceCIDRs: [Cidr.parse('10.43.0.0/16'), Cidr.parse('fd43::/112')] },
    );
    assert.deepEqual(ipv6Demand(iptablesRulesOf(fw))?.first.args, ['-d', 'fd43::/112', '-j', 'RETURN']);
  });

  test("iptables' messages for a family that cannot work are told apart from a refused rule", () => {
    const err = (argv: string[], code: number | null, stderr: string) => new ExecError(argv, code, '', stderr);
    assert.equal(
      ipv6Unusable(err(['ip6tables-legacy-save'], 1, said.legacySaveNoAF)),
      'ip6tables-legacy-save: Cannot initialize: Address family not supported by protocol',
    );
    assert.match(ipv6Unusable(err(['ip6tables-legacy-save'], 1, said.legacySaveNoTable)) ?? '', /Table does not exist/);
    assert.match(
      ipv6Unusable(err(['ip6tables-legacy'], 3, said.legacyCommandNoAF)) ?? '',
      /can't initialize ip6tables table `nat'/,
    );
    assert.equal(
      ipv6Unusable(err(['ip6tables-legacy-restore'], 2, said.legacyRestore)),
      "ip6tables-legacy-restore: unable to initialize table 'nat'",
    );
    assert.match(
      ipv6Unusable(err(['ip6tables-nft-restore'], 4, said.nftRestoreNoAF)) ?? '',
      /RULE_APPEND failed \(Address family/,
    );
    assert.match(
      ipv6Unusable(
        err(
          ['ip6tables-nft-restore'],
          4,
          'ip6tables-nft-restore v1.8.9 (nf_tables): \nline 3: CHAIN_ADD failed (Operation not supported): chain INPUT\n',
        ),
      ) ?? '',
      /CHAIN_ADD/,
    );
    assert.equal(
      ipv6Unusable(err(['ip6tables-nft-save'], null, 'spawn ip6tables-nft-save ENOENT')),
      'ip6tables-nft-save not found',
    );
    // Failures that say nothing about the family stay ordinary errors.
    assert.equal(
      ipv6Unusable(
        err(
          ['ip6tables-nft-restore'],
          4,
          'ip6tables-nft-restore v1.8.9 (nf_tables): \nline 2: RULE_APPEND failed (Invalid argument): rule in chain INPUT\n',
        ),
      ),
      null,
    );
    assert.equal(
      ipv6Unusable(
        err(
          ['ip6tables-nft-restore'],
          4,
          'ip6tables-nft-restore v1.8.9 (nf_tables): \nline 4: CHAIN_ADD failed (No such file or directory): chain KILO-NAT\n',
        ),
      ),
      null,
    );
    assert.equal(
      ipv6Unusable(err(['ip6tables-nft-restore'], 4, 'Another app is currently holding the xtables lock.\n')),
      null,
    );
    assert.equal(ipv6Unusable(err(['ip6tables-nft-save'], null, '')), null, 'killed by the timeout');
    assert.equal(
      ipv6Unusable(new Error('Address family not supported by protocol')),
      null,
      'only a command failure counts',
    );
  });
});

describe('a host without IPv6 netfilter', () => {
  for (const kind of ['ipv6.disable=1', 'no modules', 'nft without IPv6'] as const) {
    test(`${kind}, IPv4-only plan: no error, IPv4 exact, IPv6 left out, told once; re-apply runs no ip6tables and writes nothing`, async () => {
      const h = host(kind);
      const logged: string[] = [];
      const tables = new LinuxFirewallTables(h.exec, { log: (l) => logged.push(l) });
      const fw = ipv4Only();
      const want = await reference(fw, h.netfilter.backend);

      const first = await tables.reconcile(fw);
      assert.equal(dump(h.netfilter, 4), want.v4, 'IPv4 equals what a healthy host gets');
      assert.ok(first.writes > 0 && first.details.every((d) => d.startsWith('IPv4 ')), first.details.join('\n'));
      assert.equal(first.writes, first.details.length);
      assert.doesNotMatch(dump(h.netfilter, 6), /KILO/, 'nothing reached IPv6');
      assert.match(tables.ipv6Unavailable() ?? '', /Address family not supported|unable to initialize table/);
      assert.equal(logged.length, 1);
      assert.match(
        logged[0]!,
        /IPv6 netfilter is not usable on this host \(ip6tables-\S+: .+\); the plan names no IPv6 address/,
      );

      const before = ip6Runs(h);
      const restores = h.netfilter.restoreRuns();
      const m = lastWrite<FirewallWritten>();
      for (const again of [await tables.reconcile(fw, m.keep()), await tables.reconcile(fw, m.trust())])
        assert.deepEqual(again, { writes: 0, details: [] });
      assert.equal(ip6Runs(h), before, 'IPv6 is not asked again');
      assert.equal(h.netfilter.restoreRuns(), restores, 'no restore at all');
      assert.equal(logged.length, 1, 'told once');

      const cleaned = await tables.cleanup();
      assert.ok(cleaned.writes > 0);
      assert.doesNotMatch(dump(h.netfilter, 4), /KILO/, 'cleanup removed IPv4');
      assert.equal(ip6Runs(h), before, 'cleanup skips IPv6 too');
    });
  }

  test('a fresh instance cleaning up on such a host skips IPv6 without an error', async () => {
    const h = host('ipv6.disable=1');
    await new LinuxFirewallTables(h.exec).reconcile(ipv4Only());
    const tables = new LinuxFirewallTables(h.exec);
    const cleaned = await tables.cleanup();
    assert.ok(cleaned.details.every((d) => d.startsWith('IPv4 ')) && cleaned.writes > 0);
    assert.doesNotMatch(dump(h.netfilter, 4), /KILO/);
    assert.match(tables.ipv6Unavailable() ?? '', /Address family not supported/);
  });

  test('a plan with IPv6 addresses: the error names IPv6, the reason, the rule count and the first; IPv4 is applied', async () => {
    const h = host('ipv6.disable=1');
    const tables = new LinuxFirewallTables(h.exec);
    const fw = planA();
    const want = await reference(fw, 'legacy');
    const count = iptablesRulesOf(fw).rules.filter((r) => r.family === 6).length;

    const err = await tables.reconcile(fw).then(
      () => assert.fail('the IPv6 rules cannot be applied'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof IPv6UnavailableError);
    assert.equal(err.family, 6);
    assert.equal(err.demand.rules, count);
    assert.equal(
      err.message,
      'IPv6 firewall update failed: this host has no usable IPv6 netfilter ' +
        '(ip6tables-legacy-save: Cannot initialize: Address family not supported by protocol), ' +
        `so the plan's ${count} IPv6 rules are not applied ` +
        '(the first naming an IPv6 address: -t nat -A POSTROUTING -s fd05::1/128 -j KILO-NAT)',
    );
    assert.equal(dump(h.netfilter, 4), want.v4, 'IPv4 applied all the same');
  });

  test('through reconcile(): the skip leaves no step error (the agent stays healthy); IPv6 rules are one "iptables" error', async () => {
    const h = host('ipv6.disable=1');
    const dp = dataplane(new LinuxFirewallTables(h.exec));
    const ipv4Plan = planFor(twoLocations(), 'eu-a', { granularity: 'location' });
    assert.equal(ipv6Demand(iptablesRulesOf(ipv4Plan.firewall)), null, 'the helper cluster has no IPv6 address');
    const ok = await reconcile(dp, input(ipv4Plan));
    assert.deepEqual(ok.errors, []);
    assert.ok(ok.firewall.writes > 0);

    const v6Plan: Plan = { ...ipv4Plan, firewall: planA() };
    const failed = await reconcile(dp, input(v6Plan));
    assert.equal(failed.errors.length, 1);
    assert.match(
      failed.errors[0]!.message,
      /^iptables: IPv6 firewall update failed: this host has no usable IPv6 netfilter/,
    );
  });
});

describe('finding out again', () => {
  test('a failure that says nothing about IPv6 support is not remembered: the next reconcile applies IPv6', async () => {
    const h = host('lock busy once');
    const tables = new LinuxFirewallTables(h.exec);
    const fw = planA();
    const want = await reference(fw, 'nft');
    await assert.rejects(tables.reconcile(fw), /xtables lock/);
    assert.equal(tables.ipv6Unavailable(), null);
    assert.equal(dump(h.netfilter, 4), want.v4, 'IPv4 applied meanwhile');

    await tables.reconcile(fw);
    assert.equal(dump(h.netfilter, 6), want.v6);
    assert.deepEqual(await tables.reconcile(fw), { writes: 0, details: [] });
  });

  test('with IPv6 rules in the plan every reconcile tries again: a host given IPv6 netfilter recovers without a restart', async () => {
    const h = host('no modules');
    const tables = new LinuxFirewallTables(h.exec);
    const fw = planA();
    const want = await reference(fw, 'legacy');
    await assert.rejects(tables.reconcile(fw), IPv6UnavailableError);
    const tried = ip6Runs(h);
    await assert.rejects(tables.reconcile(fw), /unable to initialize table 'nat'/);
    assert.ok(ip6Runs(h) > tried, 'asked again');

    h.ip6 = 'ok'; // modprobe ip6table_nat ip6table_filter
    const fixed = await tables.reconcile(fw);
    assert.ok(fixed.details.some((d) => d.startsWith('IPv6 ')));
    assert.equal(dump(h.netfilter, 6), want.v6);
    assert.equal(tables.ipv6Unavailable(), null);
  });

  test('a plan that gains IPv6 addresses after the skip is tried, and fails by name while the host cannot', async () => {
    const h = host('nft without IPv6');
    const tables = new LinuxFirewallTables(h.exec);
    await tables.reconcile(ipv4Only());
    const skipped = ip6Runs(h);
    await assert.rejects(
      tables.reconcile(planA()),
      /IPv6 firewall update failed: .*RULE_APPEND failed \(Address family not supported by protocol\)/,
    );
    assert.ok(ip6Runs(h) > skipped);
    // Back to IPv4 only: skipped again without asking.
    const asked = ip6Runs(h);
    await tables.reconcile(ipv4Only());
    assert.equal(ip6Runs(h), asked);
  });
});

function dataplane(firewall: LinuxFirewallTables): Dataplane {
  const kernel = new FakeKernel();
  kernel.addLink('kilo0', { mtu: 1420, up: false });
  kernel.addLink('eth0', { addresses: ['10.1.0.1/24'] });
  kernel.addLink('tunl0', { up: true });
  return {
    device: new FakeWireGuardDevice('kilo0'),
    links: new FakeLinks(kernel),
    routes: fakeRoutingTables(kernel),
    firewall,
  };
}

function input(plan: Plan) {
  return {
    plan,
    privateKey: generatePrivateKey(),
    mtu: 1420,
    devices: { kilo: 'kilo0', private: 'eth0', tunnel: 'tunl0' },
  };
}
