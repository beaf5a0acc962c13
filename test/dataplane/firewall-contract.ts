import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import type { Exec } from '../../src/dataplane/exec.js';
import type { FirewallTables, FirewallWritten } from '../../src/dataplane/types.js';
import { iptablesRulesOf, type IptablesRule, type IptablesTable } from '../../src/dataplane/iptables/rules.js';
import type { Firewall, IPFamily } from '../../src/mesh/types.js';
import { planA, planB } from './firewall-plans.js';
import { lastWrite } from './last-write.js';

/**
 * How a contract test looks at one machine's firewall, in its backend's terms: each backend's
 * harness says what "exactly the plan" is for it (the iptables rules of rules.ts, the nftables
 * table of nftables/ruleset.ts), so the same tests hold both backends to the same behaviour.
 */
export interface FirewallView {
  /** The machine shows exactly the plan's firewall, and nothing of Kilo's more. */
  assertExact(intent: Firewall): Promise<void>;
  /** Nothing of Kilo's is left. */
  assertNoKilo(): Promise<void>;
  /** Rules, chains or tables of other programs, planted as they would plant them. */
  plantForeign(): Promise<void>;
  /** Everything that is not Kilo's, comparable with deepEqual. */
  foreign(): Promise<unknown>;
  /** Deletes one of Kilo's rules by hand, as an admin would. */
  deleteKiloRule(): Promise<void>;
}

/** iptables' own tools on the machine of an iptables harness. */
export interface IptablesAccess {
  /** What `iptables-save -t TABLE` (or ip6tables-save) prints. */
  save(family: IPFamily, table: IptablesTable): Promise<string>;
  /** Runs one `iptables`/`ip6tables` command, as another program or an admin would. */
  iptables(family: IPFamily, args: string[]): Promise<void>;
}

/** One machine's netfilter (a fresh namespace or the in-memory model) and a FirewallTables on it. */
export interface FirewallHarness {
  tables: FirewallTables;
  view: FirewallView;
  /** Write processes (restores, `nft -f`) that could have changed something, so far. */
  restoreRuns(): number;
  /** Write processes one change of plan costs: one per family for iptables, one for nftables. */
  batchesPerChange: number;
  /** Set for iptables harnesses: the tests of jumps in built-in chains use it. */
  iptables?: IptablesAccess;
  destroy(): void;
}

const families: IPFamily[] = [4, 6];
const tables: IptablesTable[] = ['nat', 'filter'];

/** `-p 4` and `-p ipencap` are the same rule; iptables-save prints either, by /etc/protocols. */
const norm = (line: string) => line.replace(/ -p 4 /, ' -p ipencap ');

/** The line iptables-save prints for a plan rule (plan args are already in iptables-save's order). */
function expectedLine(r: IptablesRule): string {
  const j = r.args.indexOf('-j');
  return norm(
    [
      '-A',
      r.chain,
      ...r.args.slice(0, j),
      '-m',
      'comment',
      '--comment',
      JSON.stringify(r.comment),
      ...r.args.slice(j),
    ].join(' '),
  );
}

interface Dump {
  /** Every chain, built-in or not, with its `-A` lines in order. */
  chains: Map<string, string[]>;
  builtin: Set<string>;
}

function readDump(text: string): Dump {
  const chains = new Map<string, string[]>();
  const builtin = new Set<string>();
  for (const line of text.split('\n')) {
    const decl = /^:(\S+) (\S+)/.exec(line);
    if (decl) {
      chains.set(decl[1]!, []);
      if (decl[2] !== '-') builtin.add(decl[1]!);
    }
    const rule = /^-A (\S+) /.exec(line);
    if (rule) chains.get(rule[1]!)!.push(norm(line));
  }
  return { chains, builtin };
}

const isKilo = (line: string) => line.includes('--comment "Kilo:');
const kiloChains = (d: Dump) => [...d.chains.keys()].filter((c) => c.startsWith('KILO-')).sort();

async function dumps(h: IptablesAccess): Promise<Map<string, Dump>> {
  const keys = families.flatMap((f) => tables.map((t) => [f, t] as const));
  const texts = await Promise.all(keys.map(([f, t]) => h.save(f, t)));
  return new Map(keys.map(([f, t], i) => [`${f}/${t}`, readDump(texts[i]!)]));
}

/** Non-Kilo rules of every chain, for checking that nothing foreign moved. */
export async function foreignRules(h: IptablesAccess): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const [where, d] of await dumps(h)) {
    for (const [chain, lines] of d.chains)
      if (!chain.startsWith('KILO-')) out[`${where}/${chain}`] = lines.filter((l) => !isKilo(l));
  }
  return out;
}

/** The machine shows exactly the plan: its chains with their rules, each jump once and in place. */
async function assertExact(h: IptablesAccess, intent: Firewall): Promise<void> {
  const fw = iptablesRulesOf(intent);
  for (const [where, d] of await dumps(h)) {
    const [f, t] = where.split('/') as [string, IptablesTable];
    const family = Number(f) as IPFamily;
    const mine = fw.rules.filter((r) => r.family === family && r.table === t);
    const chains = fw.chains.filter((c) => c.family === family && c.table === t).map((c) => c.name);
    assert.deepEqual(kiloChains(d), [...chains].sort(), `${where}: Kilo chains`);
    for (const c of chains) {
      assert.deepEqual(d.chains.get(c), mine.filter((r) => r.chain === c).map(expectedLine), `${where}: rules of ${c}`);
    }
    for (const c of d.builtin) {
      const lines = d.chains.get(c)!;
      const prepend = mine.filter((r) => r.chain === c && r.position === 'prepend').map(expectedLine);
      const append = mine.filter((r) => r.chain === c && r.position === 'append').map(expectedLine);
      assert.deepEqual(
        lines.filter(isKilo),
        [...prepend, ...append],
        `${where}: Kilo jumps in ${c}, each once, in plan order`,
      );
      assert.deepEqual(lines.slice(0, prepend.length), prepend, `${where}: ${c} starts with the prepend jumps`);
      assert.deepEqual(lines.slice(lines.length - append.length), append, `${where}: ${c} ends with the append jumps`);
    }
  }
}

export async function assertNoKilo(h: IptablesAccess): Promise<void> {
  for (const [where, d] of await dumps(h)) {
    assert.deepEqual(kiloChains(d), [], `${where}: no Kilo chain left`);
    for (const [c, lines] of d.chains)
      assert.deepEqual(lines.filter(isKilo), [], `${where}: no Kilo rule left in ${c}`);
  }
}

/** Rules of other programs: a masquerade, a chain of their own with a jump to it, INPUT and FORWARD rules. */
export async function plantForeign(h: IptablesAccess): Promise<void> {
  await h.iptables(4, ['-t', 'nat', '-A', 'POSTROUTING', '-s', '198.18.0.0/24', '-j', 'MASQUERADE']);
  await h.iptables(4, ['-t', 'nat', '-N', 'OTHER-NAT']);
  await h.iptables(4, ['-t', 'nat', '-A', 'OTHER-NAT', '-d', '198.18.1.0/24', '-j', 'RETURN']);
  await h.iptables(4, ['-t', 'nat', '-A', 'POSTROUTING', '-j', 'OTHER-NAT']);
  await h.iptables(4, ['-t', 'filter', '-A', 'INPUT', '-s', '198.18.0.9/32', '-j', 'ACCEPT']);
  await h.iptables(4, ['-t', 'filter', '-A', 'FORWARD', '-d', '198.18.2.0/24', '-j', 'DROP']);
  await h.iptables(6, ['-t', 'filter', '-A', 'INPUT', '-s', '2001:db8::9/128', '-j', 'ACCEPT']);
  await h.iptables(6, ['-t', 'nat', '-A', 'POSTROUTING', '-s', '2001:db8:1::/64', '-j', 'MASQUERADE']);
}

/**
 * The behaviour every FirewallTables must show, on the kernel and on the fake alike: exact,
 * idempotent at zero cost, and blind to everything that is not Kilo's.
 */
export function firewallContract(
  name: string,
  make: () => FirewallHarness | Promise<FirewallHarness>,
  skip: string | false = false,
  backend: 'iptables' | 'nftables' = 'iptables',
): void {
  describe(`FirewallTables contract: ${name}`, { skip }, () => {
    const harness = async (t: TestContext) => {
      const h = await make();
      t.after(() => h.destroy());
      return h;
    };
    /** A test of iptables' own ways (jumps in built-in chains, restore lines): not one of another backend's. */
    const iptablesTest = (
      title: string,
      fn: (ipt: IptablesAccess, h: FirewallHarness, t: TestContext) => Promise<void>,
    ) => {
      if (backend !== 'iptables') return;
      test(title, async (t) => {
        const h = await harness(t);
        assert.ok(h.iptables, 'an iptables harness gives iptables access');
        await fn(h.iptables, h, t);
      });
    };

    test('plan A on an empty machine: exactly its chains and each jump once, both families', async (t) => {
      const h = await harness(t);
      const ops = await h.tables.reconcile(planA());
      assert.ok(ops.writes > 0);
      assert.equal(ops.details.length, ops.writes);
      await h.view.assertExact(planA());
      if (!h.iptables) return;
      const nat = await h.iptables.save(4, 'nat');
      assert.match(
        nat,
        /^-A POSTROUTING -s 10\.42\.0\.0\/24 -m comment --comment "Kilo: jump to KILO-NAT chain" -j KILO-NAT$/m,
      );
      assert.match(nat, /^-A KILO-NAT -m comment --comment "Kilo: NAT remaining packets" -j MASQUERADE$/m);
      assert.match(
        await h.iptables.save(4, 'filter'),
        /^-A INPUT -p (ipencap|4) -m comment --comment "Kilo: jump to IPIP chain" -j KILO-IPIP$/m,
      );
      assert.match(
        await h.iptables.save(6, 'nat'),
        /^-A KILO-NAT -d fd05::1\/128 -m comment --comment "Kilo: do not NAT packets destined for peers" -j RETURN$/m,
      );
    });

    test('plan A again: zero writes and no restore process', async (t) => {
      const h = await harness(t);
      await h.tables.reconcile(planA());
      const runs = h.restoreRuns();
      assert.deepEqual(await h.tables.reconcile(planA()), { writes: 0, details: [] });
      assert.equal(h.restoreRuns(), runs);
    });

    test('A then B (encapsulation never, one node fewer): exact, KILO-IPIP and its jumps gone, one batch per family', async (t) => {
      const h = await harness(t);
      await h.tables.reconcile(planA());
      const runs = h.restoreRuns();
      const ops = await h.tables.reconcile(planB());
      assert.ok(ops.writes > 0);
      assert.equal(h.restoreRuns() - runs, h.batchesPerChange);
      await h.view.assertExact(planB());
      const ipt = h.iptables;
      if (ipt) {
        for (const f of families)
          assert.doesNotMatch(await ipt.save(f, 'filter'), /KILO-IPIP|ipencap| -p 4 /, `IPv${f} filter`);
        assert.doesNotMatch(
          await ipt.save(4, 'nat'),
          /10\.42\.2\.0\/24|192\.168\.1\.12/,
          'node-2 is gone from KILO-NAT',
        );
      }

      const again = h.restoreRuns();
      assert.deepEqual(await h.tables.reconcile(planB()), { writes: 0, details: [] });
      assert.equal(h.restoreRuns(), again);
    });

    test('trusting the last write: A then B, with foreign rules, writes what a read would and leaves B exactly', async (t) => {
      const h = await harness(t);
      await h.view.plantForeign();
      const before = await h.view.foreign();
      const m = lastWrite<FirewallWritten>();
      await h.tables.reconcile(planA(), m.keep());
      const trusted = await h.tables.reconcile(planB(), m.trust());
      await h.view.assertExact(planB());
      assert.deepEqual(await h.view.foreign(), before, 'foreign rules untouched and in their order');
      // The same change found by reading gives the same writes; and memory agrees with the kernel:
      // a full read afterwards finds nothing to do.
      const h2 = await harness(t);
      await h2.view.plantForeign();
      await h2.tables.reconcile(planA());
      const spelled = (o: { writes: number; details: string[] }) => ({ ...o, details: o.details.map(norm) });
      assert.deepEqual(spelled(trusted), spelled(await h2.tables.reconcile(planB())));
      const runs = h.restoreRuns();
      assert.deepEqual(await h.tables.reconcile(planB()), { writes: 0, details: [] });
      assert.deepEqual(
        spelled(await h.tables.reconcile(planA(), m.trust())),
        spelled(await h2.tables.reconcile(planA())),
      );
      assert.deepEqual(await h.tables.reconcile(planA()), { writes: 0, details: [] });
      assert.equal(
        h.restoreRuns() - runs,
        h.batchesPerChange,
        'B to A: one batch per family (iptables), one transaction (nftables)',
      );
    });

    test('trusting the last write misses a Kilo rule someone deleted; the next full read restores it', async (t) => {
      const h = await harness(t);
      const m = lastWrite<FirewallWritten>();
      await h.tables.reconcile(planA(), m.keep());
      await h.view.deleteKiloRule();
      assert.deepEqual(await h.tables.reconcile(planA(), m.trust()), { writes: 0, details: [] });
      assert.ok((await h.tables.reconcile(planA())).writes > 0);
      await h.view.assertExact(planA());
    });

    test('foreign rules and chains survive apply, re-apply, change and cleanup, in their order', async (t) => {
      const h = await harness(t);
      await h.view.plantForeign();
      const before = await h.view.foreign();
      for (const step of [
        () => h.tables.reconcile(planA()),
        () => h.tables.reconcile(planA()),
        () => h.tables.reconcile(planB()),
        () => h.tables.cleanup(),
      ]) {
        await step();
        assert.deepEqual(await h.view.foreign(), before);
      }
    });

    iptablesTest('with foreign rules present, prepend jumps lead and append jumps trail', async (ipt, h) => {
      await plantForeign(ipt);
      await h.tables.reconcile(planA());
      await assertExact(ipt, planA());
      // Another program appends after Kilo's tail and inserts before Kilo's head.
      await ipt.iptables(4, ['-t', 'filter', '-A', 'INPUT', '-s', '198.18.0.10/32', '-j', 'ACCEPT']);
      await ipt.iptables(4, ['-t', 'nat', '-I', 'POSTROUTING', '1', '-s', '198.18.3.0/24', '-j', 'RETURN']);
      const ops = await h.tables.reconcile(planA());
      assert.ok(ops.writes > 0);
      await assertExact(ipt, planA());
    });

    iptablesTest('a Kilo jump added twice by hand is reduced to one', async (ipt, h) => {
      await plantForeign(ipt);
      await h.tables.reconcile(planA());
      const foreign = await foreignRules(ipt);
      const comment = (c: string) => ['-m', 'comment', '--comment', c];
      await ipt.iptables(4, [
        '-t',
        'nat',
        '-A',
        'POSTROUTING',
        '-s',
        '10.42.0.0/24',
        ...comment('Kilo: jump to KILO-NAT chain'),
        '-j',
        'KILO-NAT',
      ]);
      await ipt.iptables(4, [
        '-t',
        'filter',
        '-I',
        'INPUT',
        '1',
        '-p',
        '4',
        ...comment('Kilo: reject other IPIP traffic'),
        '-j',
        'DROP',
      ]);
      await ipt.iptables(4, [
        '-t',
        'filter',
        '-I',
        'FORWARD',
        '1',
        '-s',
        '10.42.0.0/24',
        ...comment('Kilo: forward packets from the pod subnet'),
        '-j',
        'ACCEPT',
      ]);
      assert.equal(
        (await ipt.save(4, 'nat')).split('-s 10.42.0.0/24 -m comment').length - 1,
        2,
        'the duplicate is there',
      );
      await h.tables.reconcile(planA());
      await assertExact(ipt, planA());
      assert.deepEqual(await foreignRules(ipt), foreign);
      assert.equal((await h.tables.reconcile(planA())).writes, 0);
    });

    iptablesTest('a Kilo jump moved out of place goes back in place', async (ipt, h) => {
      await plantForeign(ipt);
      await h.tables.reconcile(planA());
      const [first] = iptablesRulesOf(planA()).rules.filter((r) => r.family === 4 && r.chain === 'FORWARD');
      await ipt.iptables(4, ['-t', 'filter', '-D', 'FORWARD', '1']);
      await ipt.iptables(4, [
        '-t',
        'filter',
        '-A',
        'FORWARD',
        ...first!.args.slice(0, -2),
        '-m',
        'comment',
        '--comment',
        first!.comment,
        ...first!.args.slice(-2),
      ]);
      await h.tables.reconcile(planA());
      await assertExact(ipt, planA());
    });

    iptablesTest('a stale Kilo jump from an earlier run is removed', async (ipt, h) => {
      await plantForeign(ipt);
      const foreign = await foreignRules(ipt);
      await ipt.iptables(4, [
        '-t',
        'filter',
        '-A',
        'FORWARD',
        '-s',
        '10.99.0.0/24',
        '-m',
        'comment',
        '--comment',
        'Kilo: forward packets from the pod subnet',
        '-j',
        'ACCEPT',
      ]);
      await ipt.iptables(6, ['-t', 'nat', '-N', 'KILO-NAT']);
      await ipt.iptables(6, [
        '-t',
        'nat',
        '-I',
        'POSTROUTING',
        '1',
        '-s',
        'fd99::/64',
        '-m',
        'comment',
        '--comment',
        'Kilo: jump to KILO-NAT chain',
        '-j',
        'KILO-NAT',
      ]);
      await h.tables.reconcile(planA());
      await assertExact(ipt, planA());
      assert.doesNotMatch(await ipt.save(4, 'filter'), /10\.99\.0\.0/);
      assert.doesNotMatch(await ipt.save(6, 'nat'), /fd99::/);
      assert.deepEqual(await foreignRules(ipt), foreign);
    });

    test('cleanup leaves no Kilo chain or rule in either family, and a second cleanup writes nothing', async (t) => {
      const h = await harness(t);
      await h.view.plantForeign();
      const foreign = await h.view.foreign();
      await h.tables.reconcile(planA());
      const ops = await h.tables.cleanup();
      assert.ok(ops.writes > 0);
      await h.view.assertNoKilo();
      assert.deepEqual(await h.view.foreign(), foreign);
      const runs = h.restoreRuns();
      assert.deepEqual(await h.tables.cleanup(), { writes: 0, details: [] });
      assert.equal(h.restoreRuns(), runs);
    });

    test('a batch iptables refuses changes nothing in that family and names family and line', async (t) => {
      const h = await harness(t);
      const bad = planA();
      // A mask iptables cannot parse, in the filter table's KILO-IPIP (the nat table changes too).
      bad.ipip!.sources.push('10.9.0.0/33');
      await assert.rejects(h.tables.reconcile(bad), (e: Error) => {
        if (h.iptables) {
          assert.match(e.message, /IPv4/);
          assert.match(e.message, /line \d+ .*-s 10\.9\.0\.0\/33/);
        } else assert.match(e.message, /10\.9\.0\.0\/33/);
        return true;
      });
      // The nat table came first in the batch; it must not have been committed alone. (iptables
      // writes each family on its own: IPv6 has no such address and is applied.)
      if (h.iptables) {
        assert.doesNotMatch(await h.iptables.save(4, 'nat'), /Kilo:/);
        assert.doesNotMatch(await h.iptables.save(4, 'filter'), /Kilo:/);
      } else await h.view.assertNoKilo();
    });
  });
}

/** The iptables backend's view: its rules as iptables-save prints them (rules.ts), jumps in place. */
export function iptablesView(ipt: IptablesAccess): FirewallView {
  return {
    assertExact: (intent) => assertExact(ipt, intent),
    assertNoKilo: () => assertNoKilo(ipt),
    plantForeign: () => plantForeign(ipt),
    foreign: () => foreignRules(ipt),
    deleteKiloRule: () => ipt.iptables(4, ['-t', 'nat', '-D', 'KILO-NAT', '1']),
  };
}

/** `exec`, counting the processes `writes` says could write (a restore, an `nft -f`; not a dry run). */
export function countingWrites(
  exec: Exec,
  writes: (argv: readonly string[]) => boolean,
): { exec: Exec; runs: () => number } {
  let runs = 0;
  return {
    exec: {
      ...exec,
      run: (argv, opts) => {
        if (writes(argv)) runs++;
        return exec.run(argv, opts);
      },
    },
    runs: () => runs,
  };
}
