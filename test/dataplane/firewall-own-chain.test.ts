/**
 * Big Kilo chains change by a few rules (a node leaves a 1,000-node cluster): the change is made
 * rule by rule, not by rewriting the chain; and a reconcile reads each family once.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Exec } from '../../src/dataplane/exec.js';
import { createFakeFirewall } from '../../src/dataplane/iptables/fake.js';
import { editOwnChain } from '../../src/dataplane/iptables/own-chain.js';
import { renderFamily } from '../../src/dataplane/iptables/render.js';
import { parseSave } from '../../src/dataplane/iptables/save.js';
import { LinuxFirewallTables } from '../../src/dataplane/iptables/tables.js';
import type { IptablesRule, IptablesRules } from '../../src/dataplane/iptables/rules.js';

const ret = (dst: string): IptablesRule => ({
  family: 4,
  table: 'nat',
  chain: 'KILO-NAT',
  args: ['-d', dst, '-j', 'RETURN'],
  comment: 'Kilo: do not NAT packets destined for known IPs',
  position: 'append',
});
const masquerade: IptablesRule = {
  ...ret('0.0.0.0/0'),
  args: ['-j', 'MASQUERADE'],
  comment: 'Kilo: NAT remaining packets',
};
const jump: IptablesRule = {
  family: 4,
  table: 'nat',
  chain: 'POSTROUTING',
  args: ['-s', '10.42.0.0/24', '-j', 'KILO-NAT'],
  comment: 'Kilo: jump to KILO-NAT chain',
  position: 'prepend',
};

/** KILO-NAT with a RETURN per node pod CIDR, then MASQUERADE; `without` nodes left out. */
function plan(nodes: number, without: number[] = [], extra: string[] = []): IptablesRules {
  const rules = [jump];
  for (let i = 0; i < nodes; i++) if (!without.includes(i)) rules.push(ret(`10.${42 + (i >> 8)}.${i & 255}.0/24`));
  for (const dst of extra) rules.push(ret(dst));
  rules.push(masquerade);
  return { chains: [{ family: 4, table: 'nat', name: 'KILO-NAT' }], rules };
}

async function applied(a: IptablesRules) {
  const { tables, netfilter } = createFakeFirewall();
  await tables.reconcileRules(a);
  return { tables, netfilter };
}

test('one node leaving and one joining a 2,000-rule KILO-NAT: two restore lines, the chain exact', async () => {
  const { tables, netfilter } = await applied(plan(2000));
  const b = plan(2000, [700], ['10.99.0.0/24']);
  const batch = renderFamily(4, b, { nat: netfilter.save(4, 'nat'), filter: netfilter.save(4, 'filter') });
  const lines = batch.input.split('\n').filter((l) => /^[-:]/.test(l));
  assert.deepEqual(lines, [
    '-D KILO-NAT -d 10.44.188.0/24 -m comment --comment "Kilo: do not NAT packets destined for known IPs" -j RETURN',
    '-I KILO-NAT 2000 -d 10.99.0.0/24 -m comment --comment "Kilo: do not NAT packets destined for known IPs" -j RETURN',
  ]);
  const ops = await tables.reconcileRules(b);
  assert.equal(ops.writes, 2, 'one write per rule that changed');
  const dst = (args: readonly string[]) => (args.includes('MASQUERADE') ? 'MASQUERADE' : args[1]);
  const after = parseSave(netfilter.save(4, 'nat'), 'nat')
    .chains.get('KILO-NAT')!
    .rules.map((r) => dst(r.args));
  assert.deepEqual(
    after,
    b.rules.filter((r) => r.chain === 'KILO-NAT').map((r) => dst(r.args)),
  );
  assert.deepEqual(await tables.reconcileRules(b), { writes: 0, details: [] });
});

test('when most rules change the chain is replaced whole', async () => {
  const { netfilter } = await applied(plan(10));
  const b = plan(10, [0, 1, 2, 3, 4, 5], ['10.99.0.0/24', '10.99.1.0/24']);
  const batch = renderFamily(4, b, { nat: netfilter.save(4, 'nat'), filter: netfilter.save(4, 'filter') });
  assert.match(batch.input, /^:KILO-NAT - \[0:0\]$/m);
  assert.deepEqual(batch.changes, ['IPv4 nat: replace chain KILO-NAT (7 rules, was 11)']);
});

test('a rule to delete with an identical twin: no rule-by-rule edit (-D would hit the first copy)', () => {
  const saved = parseSave(
    [
      '*nat',
      ':KILO-NAT - [0:0]',
      '-A KILO-NAT -d 10.1.0.0/24 -j RETURN',
      '-A KILO-NAT -d 10.2.0.0/24 -j RETURN',
      '-A KILO-NAT -d 10.3.0.0/24 -j RETURN',
      '-A KILO-NAT -d 10.4.0.0/24 -j RETURN',
      '-A KILO-NAT -d 10.1.0.0/24 -j RETURN',
      'COMMIT',
    ].join('\n'),
    'nat',
  ).chains.get('KILO-NAT')!;
  const want = saved.rules
    .slice(0, 4)
    .map((r) => ({ chain: 'KILO-NAT', args: r.args, key: r.key, text: r.text, position: 'append' as const }));
  assert.equal(editOwnChain(saved, want), null);
  assert.deepEqual(editOwnChain(saved, [...want, want[0]!]), [], 'nothing to do is no edit');
});

test('a reconcile reads each family with one iptables-save', async () => {
  const { tables, netfilter } = await applied(plan(5));
  const before = netfilter.runs.length;
  assert.deepEqual(await tables.reconcileRules(plan(5)), { writes: 0, details: [] });
  const saves = netfilter.runs.slice(before).filter((a) => /save$/.test(a[0]!));
  assert.deepEqual(saves.map((a) => a.join(' ')).sort(), ['ip6tables-nft-save', 'iptables-nft-save']);
});

test('a table missing from the full save (never used) reads as its built-in chains, with no second save', async () => {
  const { netfilter } = createFakeFirewall();
  const inner = netfilter.exec();
  const runs: string[] = [];
  // Like iptables-nft-save on a fresh machine: the filter table does not exist, so it is not printed.
  const exec: Exec = {
    ...inner,
    run: async (argv, opts) => {
      runs.push(argv.join(' '));
      const r = await inner.run(argv, opts);
      if (/save$/.test(argv[0]!) && !argv.includes('-t'))
        return { ...r, stdout: r.stdout.replace(/\*filter\n[\s\S]*?COMMIT\n/, '') };
      return r;
    },
  };
  const tables = new LinuxFirewallTables(exec);
  const input: IptablesRule = {
    family: 4,
    table: 'filter',
    chain: 'INPUT',
    args: ['-p', 'ipencap', '-j', 'DROP'],
    comment: 'Kilo: reject other IPIP traffic',
    position: 'append',
  };
  const fw = { ...plan(3), rules: [...plan(3).rules, input] };
  assert.ok((await tables.reconcileRules(fw)).writes > 0);
  assert.equal(runs.filter((r) => /save/.test(r)).length, 2, 'one save per family');
  assert.ok(runs.every((r) => !/save -t/.test(r)));
  assert.match(
    netfilter.save(4, 'filter'),
    /-A INPUT -p ipencap -m comment --comment "Kilo: reject other IPIP traffic" -j DROP/,
  );
});
