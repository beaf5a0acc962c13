import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ExecError, type Exec } from '../../src/dataplane/exec.js';
import { FakeNetfilter } from '../../src/dataplane/iptables/fake.js';
import { chooseFirewall, FirewallUnavailableError } from '../../src/dataplane/nftables/choice.js';
import { fakeNetfilterExec, FakeNftables } from '../../src/dataplane/nftables/fake.js';
import { LinuxNftablesTables, NftablesUnavailableError } from '../../src/dataplane/nftables/tables.js';
import type { IptablesAccess } from './firewall-contract.js';
import { nftablesHostsSuite, type HostHarness } from './firewall-nftables-hosts.js';
import { planA } from './firewall-plans.js';

function fakeHost(): HostHarness & { nft: FakeNftables; iptables: FakeNetfilter } {
  const nft = new FakeNftables();
  const iptables = new FakeNetfilter('nft');
  const exec = fakeNetfilterExec(nft, iptables);
  const missing = new FakeNftables();
  missing.broken = 'no-binary';
  const ipt: IptablesAccess = {
    save: (family, table) => Promise.resolve(iptables.save(family, table)),
    iptables: async (family, args) => void (await exec.run([family === 6 ? 'ip6tables' : 'iptables', ...args])),
  };
  return { exec, ipt, withoutNft: fakeNetfilterExec(missing, iptables), destroy: () => {}, nft, iptables };
}

nftablesHostsSuite('in-memory nftables and iptables', fakeHost);

test('a kernel without nf_tables: one clear error, auto takes iptables, no transaction tried, iptables untouched', async () => {
  const h = fakeHost();
  h.nft.broken = 'no-kernel';
  await h.ipt.iptables(4, ['-P', 'FORWARD', 'DROP']);
  const restores = h.iptables.restoreRuns();
  await assert.rejects(chooseFirewall(h.exec, 'nftables'), (e: Error) => {
    assert.ok(e instanceof FirewallUnavailableError);
    assert.match(e.message, /the kernel has no nf_tables \(nft said: .*Operation not supported\).*--firewall=iptables/);
    return true;
  });
  assert.equal((await chooseFirewall(h.exec, 'auto')).backend, 'iptables');
  await assert.rejects(new LinuxNftablesTables(h.exec).reconcile(planA()), NftablesUnavailableError);
  assert.equal(h.nft.scriptRuns(), 0);
  assert.equal(h.iptables.restoreRuns(), restores);
});

test('neither nft nor iptables: auto says so, once', async () => {
  const nft = new FakeNftables();
  nft.broken = 'no-binary';
  const exec = fakeNetfilterExec(nft, new FakeNetfilter('nft'));
  const noIptables: Exec = {
    ...exec,
    run: (argv, opts) =>
      argv[0] === 'iptables'
        ? Promise.reject(new ExecError(argv, null, '', 'spawn iptables ENOENT'))
        : exec.run(argv, opts),
  };
  await assert.rejects(chooseFirewall(noIptables, 'auto'), /neither backend can run here/);
});
