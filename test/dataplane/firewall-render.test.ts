import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ExecError, type Exec } from '../../src/dataplane/exec.js';
import { createFakeFirewall } from '../../src/dataplane/iptables/fake.js';
import { renderCleanup, renderFamily, type FamilyDump } from '../../src/dataplane/iptables/render.js';
import { canonicalArgs, joinArgs, quote, tokenize, withComment } from '../../src/dataplane/iptables/syntax.js';
import { IptablesError, LinuxFirewallTables } from '../../src/dataplane/iptables/tables.js';
import type { Firewall, FirewallRule } from '../../src/mesh/types.js';

const empty =
  '*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\nCOMMIT\n';
const emptyFilter = '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n';

const jump = (args: string[], position: FirewallRule['position'] = 'prepend', chain = 'POSTROUTING'): FirewallRule => ({
  family: 4,
  table: 'nat',
  chain,
  args,
  comment: 'Kilo: jump to KILO-NAT chain',
  position,
});
const natPlan = (rules: FirewallRule[]): Firewall => ({
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
  const fw: Firewall = {
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
  assert.deepEqual(renderFamily(4, fw, dump(empty, filter)), { family: 4, input: '', changes: [] });
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
  const fw: Firewall = { chains: [], rules: [jump(['-s', '10.42.0.0/24', '-j', 'KILO-NAT'])] };
  assert.throws(
    () => renderFamily(4, fw, dump(empty)),
    /IPv4 nat: rule 0 in POSTROUTING jumps to KILO-NAT, which the plan does not declare/,
  );
  const bad: Firewall = { chains: [{ family: 4, table: 'nat', name: 'MY-NAT' }], rules: [] };
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
  await tables.reconcile(natPlan([jump(['-s', '10.42.0.0/24', '-j', 'KILO-NAT'])]));
  assert.match(netfilter.save(4, 'nat', 'legacy'), /KILO-NAT/);
  assert.doesNotMatch(netfilter.save(4, 'nat', 'nft'), /KILO-NAT/);
  assert.ok(
    netfilter.runs.every((argv) => !/^ip6?tables-(save|restore)$/.test(argv[0]!) && !argv[0]!.includes('-nft')),
  );
});

test('a refused batch is an IptablesError with family, line number and line', async () => {
  const { tables } = createFakeFirewall();
  const fw = natPlan([{ ...jump(['-p', 'bogus', '-j', 'RETURN'], 'append', 'KILO-NAT'), family: 4 }]);
  const e = await tables.reconcile(fw).then(
    () => null,
    (x: unknown) => x,
  );
  assert.ok(e instanceof IptablesError);
  assert.equal(e.family, 4);
  assert.equal(e.line, 3);
  assert.match(e.lineText ?? '', /^-A KILO-NAT -p bogus /);
  assert.match(e.message, /unknown protocol "bogus"/);
});
