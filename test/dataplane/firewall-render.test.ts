import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ExecError, type Exec } from '../../src/dataplane/exec.js';
import { createFakeFirewall } from '../../src/dataplane/iptables/fake.js';
import { renderCleanup, renderFamily, type FamilyDump } from '../../src/dataplane/iptables/render.js';
import { canonicalArgs, joinArgs, quote, tokenize, withComment } from '../../src/dataplane/iptables/syntax.js';
import { IptablesError, LinuxFirewallTables } from '../../src/dataplane/iptables/tables.js';
import type { IptablesRule, IptablesRules } from '../../src/dataplane/iptables/rules.js';

const empty =
  '*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\nCOMMIT\n';
const emptyFilter = '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n';

const jump = (args: string[], position: IptablesRule['position'] = 'prepend', chain = 'POSTROUTING'): IptablesRule => ({
  family: 4,
  table: 'nat',
  chain,
  args,
  comment: 'Kilo: jump to KILO-NAT chain',
  position,
});
const natPlan = (rules: IptablesRule[]): IptablesRules => ({
  chains: [{ family: 4, table: 'nat', name: 'KILO-NAT' }],
  rules,
});
const dump = (nat: string, filter = emptyFilter): FamilyDump => ({ nat, filter });

test('comments are quoted as iptables-save quotes them and tokenize back unchanged', () => {
  for (const c of ['Kilo: plain', 'Kilo: "double" and \'single\'', 'Kilo: back\\slash', 'x']) {
    assert.deepEqual(tokenize(joinArgs(['-m', 'comment', '--comment', c, '-j', 'RETURN'])), [
      '-m',
      'comment',
      '--comment',
      c,
      '-j',
      'RETURN',
    ]);
  }
  assert.equal(quote('Kilo: a "b"'), '"Kilo: a \\"b\\""');
  assert.equal(quote('bare_ok-1'), 'bare_ok-1');
  assert.throws(() => withComment(['-j', 'RETURN'], 'Kilo: two\nlines'), /control character/);
  assert.throws(() => withComment(['-j', 'RETURN'], `Kilo: ${'x'.repeat(300)}`), /longer than 255 bytes/);
});

test("desired rules take iptables-save's order and spelling", () => {
  assert.deepEqual(canonicalArgs(withComment(['-p', 'ipencap', '-s', '192.168.1.11', '-j', 'ACCEPT'], 'Kilo: c')), [
    '-s',
    '192.168.1.11/32',
    '-p',
    '4',
    '-m',
    'comment',
    '--comment',
    'Kilo: c',
    '-j',
    'ACCEPT',
  ]);
  assert.deepEqual(canonicalArgs(['!', '-d', 'fd00::1', '-j', 'X']), ['!', '-d', 'fd00::1/128', '-j', 'X']);
});

test('a machine equal to the plan renders nothing; -p 4 and -p ipencap are the same rule', () => {
  const fw: IptablesRules = {
    chains: [{ family: 4, table: 'filter', name: 'KILO-IPIP' }],
    rules: [
      {
        family: 4,
        table: 'filter',
        chain: 'INPUT',
        args: ['-p', 'ipencap', '-j', 'KILO-IPIP'],
        comment: 'Kilo: jump to IPIP chain',
        position: 'append',
      },
    ],
  };
  const filter = `*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:KILO-IPIP - [0:0]\n-A INPUT -p 4 -m comment --comment "Kilo: jump to IPIP chain" -j KILO-IPIP\nCOMMIT\n`;
  const { family, input, changes } = renderFamily(4, fw, dump(empty, filter));
  assert.deepEqual({ family, input, changes }, { family: 4, input: '', changes: [] });
  assert.equal(renderFamily(4, fw, dump(empty, filter.replace('-p 4', '-p ipencap'))).input, '');
});

test('a duplicate after a kept copy forces a rebuild, since -D by text removes the first copy', () => {
  const j = jump(['-s', '10.42.0.0/24', '-j', 'KILO-NAT']);
  const line = '-s 10.42.0.0/24 -m comment --comment "Kilo: jump to KILO-NAT chain" -j KILO-NAT';
  const nat = empty.replace(
    'COMMIT',
    `:KILO-NAT - [0:0]\n-A POSTROUTING ${line}\n-A POSTROUTING -j MASQUERADE\n-A POSTROUTING ${line}\nCOMMIT`,
  );
  const { input } = renderFamily(4, natPlan([j]), dump(nat));
  assert.deepEqual(
    input
      .trim()
      .split('\n')
      .filter((l) => /^-[DIA] POSTROUTING/.test(l)),
    [`-D POSTROUTING ${line}`, `-D POSTROUTING ${line}`, `-I POSTROUTING 1 ${line}`],
  );
});

test('jumps already in place are kept; only the missing one is inserted at its position', () => {
  const a = jump(['-s', '10.42.0.0/24', '-j', 'KILO-NAT']);
  const b = jump(['-s', '10.5.0.1/32', '-j', 'KILO-NAT']);
  const nat = empty.replace(
    'COMMIT',
    `:KILO-NAT - [0:0]\n-A POSTROUTING -s 10.42.0.0/24 -m comment --comment "Kilo: jump to KILO-NAT chain" -j KILO-NAT\n-A POSTROUTING -j MASQUERADE\nCOMMIT`,
  );
  const r = renderFamily(4, natPlan([a, b]), dump(nat));
  assert.deepEqual(r.changes, [
    'IPv4 nat: -I POSTROUTING 2 -s 10.5.0.1/32 -m comment --comment "Kilo: jump to KILO-NAT chain" -j KILO-NAT',
  ]);
});

test('a stale Kilo chain still jumped to by a foreign rule is flushed but kept, and then left alone', () => {
  const filter = `*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:KILO-IPIP - [0:0]\n-A INPUT -p ipencap -j KILO-IPIP\n-A INPUT -p ipencap -m comment --comment "Kilo: jump to IPIP chain" -j KILO-IPIP\n-A KILO-IPIP -s 192.168.1.11/32 -m comment --comment "Kilo: allow IPIP traffic" -j ACCEPT\nCOMMIT\n`;
  const r = renderCleanup(4, dump(empty, filter));
  assert.deepEqual(
    r.input.split('\n').filter((l) => l.startsWith('-')),
    ['-D INPUT -p ipencap -m comment --comment "Kilo: jump to IPIP chain" -j KILO-IPIP', '-F KILO-IPIP'],
  );
  const after = `*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:KILO-IPIP - [0:0]\n-A INPUT -p ipencap -j KILO-IPIP\nCOMMIT\n`;
  assert.equal(renderCleanup(4, dump(empty, after)).input, '');
});

test('a plan that jumps to a chain it does not declare is refused, naming the chain', () => {
  const fw: IptablesRules = { chains: [], rules: [jump(['-s', '10.42.0.0/24', '-j', 'KILO-NAT'])] };
  assert.throws(
    () => renderFamily(4, fw, dump(empty)),
    /IPv4 nat: rule 0 in POSTROUTING jumps to KILO-NAT, which the plan does not declare/,
  );
  const bad: IptablesRules = { chains: [{ family: 4, table: 'nat', name: 'MY-NAT' }], rules: [] };
  assert.throws(() => renderFamily(4, bad, dump(empty)), /chain MY-NAT is not named KILO-/);
});

function recording(answers: (argv: readonly string[]) => string | ExecError): { exec: Exec; calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    exec: {
      run: (argv) => {
        calls.push(argv.join(' '));
        const a = answers(argv);
        return a instanceof ExecError ? Promise.reject(a) : Promise.resolve({ stdout: a, stderr: '' });
      },
      start: () => {
        throw new Error('unused');
      },
      wireGuardRunDir: '',
    },
  };
}

test('the backend named by iptables -V picks the binaries of both families', async () => {
  const legacy = recording((argv) => (argv[0] === 'iptables' ? 'iptables v1.8.9 (legacy)\n' : 'v1.8.9 (legacy)\n'));
  const tools = await new LinuxFirewallTables(legacy.exec).backend();
  assert.equal(tools.backend, 'legacy');
  assert.deepEqual(
    [tools.save[4], tools.save[6], tools.restore[4], tools.restore[6]],
    ['iptables-legacy-save', 'ip6tables-legacy-save', 'iptables-legacy-restore', 'ip6tables-legacy-restore'],
  );
  // An iptables older than 1.8 has no -legacy names: its plain binaries are the legacy ones.
  const old = recording((argv) =>
    argv[0] === 'iptables' ? 'iptables v1.6.1\n' : new ExecError(argv, 127, '', 'not found'),
  );
  const oldTools = await new LinuxFirewallTables(old.exec).backend();
  assert.deepEqual(
    [oldTools.backend, oldTools.save[6], oldTools.restore[4]],
    ['legacy', 'ip6tables-save', 'iptables-restore'],
  );
});

test('the fake keeps nft and legacy tables apart, as the kernel does', async () => {
  const { netfilter } = createFakeFirewall('nft');
  const tables = new LinuxFirewallTables(netfilter.exec(), { backend: 'legacy' });
  await tables.reconcileRules(natPlan([jump(['-s', '10.42.0.0/24', '-j', 'KILO-NAT'])]));
  assert.match(netfilter.save(4, 'nat', 'legacy'), /KILO-NAT/);
  assert.doesNotMatch(netfilter.save(4, 'nat', 'nft'), /KILO-NAT/);
  assert.ok(
    netfilter.runs.every((argv) => !/^ip6?tables-(save|restore)$/.test(argv[0]!) && !argv[0]!.includes('-nft')),
  );
});

test('a refused batch is an IptablesError with family, line number and line', async () => {
  const { tables } = createFakeFirewall();
  const fw = natPlan([{ ...jump(['-p', 'bogus', '-j', 'RETURN'], 'append', 'KILO-NAT'), family: 4 }]);
  const e = await tables.reconcileRules(fw).then(
    () => null,
    (x: unknown) => x,
  );
  assert.ok(e instanceof IptablesError);
  assert.equal(e.family, 4);
  assert.equal(e.line, 3);
  assert.match(e.lineText ?? '', /^-A KILO-NAT -p bogus /);
  assert.match(e.message, /unknown protocol "bogus"/);
});

/** POSTROUTING holding these rules: a–z are Kilo jumps (to KILO-NAT, by source 10.42.N.0/24), F-n foreign. */
function postrouting(names: string[]): string {
  const lines = names.map((n) =>
    n.startsWith('F')
      ? `-A POSTROUTING -s 198.18.${n.slice(1)}.0/24 -j MASQUERADE`
      : `-A POSTROUTING -s 10.42.${n.charCodeAt(0) - 97}.0/24 -m comment --comment "Kilo: jump to KILO-NAT chain" -j KILO-NAT`,
  );
  return empty.replace('COMMIT', [':KILO-NAT - [0:0]', ...lines, 'COMMIT'].join('\n'));
}
const kiloJump = (n: string, position: IptablesRule['position']) =>
  jump(['-s', `10.42.${n.charCodeAt(0) - 97}.0/24`, '-j', 'KILO-NAT'], position);
const edits = (have: string[], prepend: string[], append: string[]) =>
  renderFamily(
    4,
    natPlan([...prepend.map((n) => kiloJump(n, 'prepend')), ...append.map((n) => kiloJump(n, 'append'))]),
    dump(postrouting(have)),
  ).changes.map((c) => c.replace(/ -m comment .*$/, '').replace('IPv4 nat: ', ''));

test('a jump leaving or joining the middle costs one edit, not a rebuild', () => {
  assert.deepEqual(edits(['a', 'b', 'c', 'd', 'F1'], ['a', 'c', 'd'], []), ['-D POSTROUTING -s 10.42.1.0/24']);
  assert.deepEqual(edits(['a', 'c', 'F1'], ['a', 'b', 'c'], []), ['-I POSTROUTING 2 -s 10.42.1.0/24']);
  assert.deepEqual(edits(['F1', 'x', 'z'], [], ['x', 'y', 'z']), ['-I POSTROUTING 3 -s 10.42.24.0/24']);
  assert.deepEqual(edits(['a', 'z'], ['a'], ['y', 'z']), ['-I POSTROUTING 2 -s 10.42.24.0/24']);
  assert.deepEqual(edits(['F1', 'x'], [], ['x', 'y']), ['-A POSTROUTING -s 10.42.24.0/24']);
  // Between foreign rules a Kilo jump is never in place.
  assert.deepEqual(edits(['a', 'F1', 'b', 'F2'], ['a', 'b'], []), [
    '-D POSTROUTING -s 10.42.1.0/24',
    '-I POSTROUTING 2 -s 10.42.1.0/24',
  ]);
});

/** A small deterministic PRNG, so a failure names a seed that reproduces it. */
function random(seed: number): (n: number) => number {
  let s = seed >>> 0;
  return (n) => {
    s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
    return s % n;
  };
}

test('from any mix of foreign, stale, duplicated and shuffled jumps, one reconcile is exact', async () => {
  for (let seed = 1; seed <= 150; seed++) {
    const rnd = random(seed);
    const letters = 'abcdefghij'.split('');
    const pick = (k: number) => letters.filter(() => rnd(100) < k);
    const prepend = pick(40);
    const append = letters.filter((l) => !prepend.includes(l) && rnd(100) < 40);
    const have = Array.from({ length: rnd(12) }, (_, i) => (rnd(3) === 0 ? `F${i}` : letters[rnd(letters.length)]!));
    const { netfilter, tables } = createFakeFirewall();
    netfilter.restore(4, postrouting(have), { noflush: true, test: false });
    await tables.reconcileRules(
      natPlan([...prepend.map((n) => kiloJump(n, 'prepend')), ...append.map((n) => kiloJump(n, 'append'))]),
    );
    const after = netfilter
      .save(4, 'nat')
      .split('\n')
      .filter((l) => l.startsWith('-A POSTROUTING'))
      .map((l) =>
        l.includes('Kilo:')
          ? String.fromCharCode(97 + Number(/10\.42\.(\d+)\./.exec(l)![1]))
          : `F${/198\.18\.(\d+)\./.exec(l)![1]}`,
      );
    const foreign = have.filter((n) => n.startsWith('F'));
    assert.deepEqual(
      after,
      [...prepend, ...foreign, ...append],
      `seed ${seed}: ${have.join(',')} → ${after.join(',')}`,
    );
    assert.equal(
      (
        await tables.reconcileRules(
          natPlan([...prepend.map((n) => kiloJump(n, 'prepend')), ...append.map((n) => kiloJump(n, 'append'))]),
        )
      ).writes,
      0,
    );
  }
});

test('a failed backend detection is retried on the next call, not remembered', async () => {
  let calls = 0;
  const flaky = recording((argv) => {
    if (argv[0] === 'iptables' && calls++ === 0) return new ExecError(argv, 1, '', 'xtables lock busy');
    return 'iptables v1.8.9 (nf_tables)\n';
  });
  const tables = new LinuxFirewallTables(flaky.exec);
  await assert.rejects(tables.backend(), /xtables lock busy/);
  assert.equal((await tables.backend()).backend, 'nft');
});
