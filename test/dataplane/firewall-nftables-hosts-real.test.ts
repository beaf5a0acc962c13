import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import type { Exec } from '../../src/dataplane/exec.js';
import { LinuxNftablesTables } from '../../src/dataplane/nftables/tables.js';
import { createNamespace, skipNoNetns, type TestNamespace } from '../helpers/netns.js';
import type { IptablesAccess } from './firewall-contract.js';
import { nftablesHostsSuite } from './firewall-nftables-hosts.js';
import { planA } from './firewall-plans.js';

function iptablesIn(ns: TestNamespace): IptablesAccess {
  return {
    save: async (family, table) =>
      (await ns.exec.run([family === 6 ? 'ip6tables-save' : 'iptables-save', '-t', table])).stdout,
    iptables: async (family, args) =>
      void (await ns.exec.run([family === 6 ? 'ip6tables' : 'iptables', '-w', ...args])),
  };
}

nftablesHostsSuite(
  'a network namespace',
  () => {
    const ns = createNamespace('ktnh');
    const withoutNft: Exec = {
      ...ns.exec,
      // The binary is missing: nsenter fails to execute it, as on a host without nft.
      run: (argv, opts) => ns.exec.run(argv[0] === 'nft' ? ['kilo-test-no-such-nft', ...argv.slice(1)] : argv, opts),
    };
    return { exec: ns.exec, ipt: iptablesIn(ns), withoutNft, destroy: () => ns.destroy() };
  },
  skipNoNetns,
);

/**
 * Three namespaces: a (10.42.9.2) - router - b (10.42.1.2, inside planA's forwarded pod CIDR
 * 10.42.1.0/24). The router forwards, and its iptables FORWARD policy is DROP, as Docker sets it.
 */
function routed(): { a: TestNamespace; r: TestNamespace; b: TestNamespace; destroy(): void } {
  const [a, r, b] = [createNamespace('ktfa'), createNamespace('ktfr'), createNamespace('ktfb')];
  const destroy = () => [a, r, b].forEach((n) => n.destroy());
  try {
    const ip = (...args: string[]) => {
      const p = spawnSync('ip', args, { encoding: 'utf8' });
      if (p.status !== 0) throw new Error(`ip ${args.join(' ')}: ${p.stderr}`);
    };
    ip('link', 'add', 'va', 'netns', a.name, 'type', 'veth', 'peer', 'name', 'ra', 'netns', r.name);
    ip('link', 'add', 'vb', 'netns', b.name, 'type', 'veth', 'peer', 'name', 'rb', 'netns', r.name);
    a.sh('ip addr add 10.42.9.2/24 dev va && ip link set va up && ip route add default via 10.42.9.1');
    b.sh('ip addr add 10.42.1.2/24 dev vb && ip link set vb up && ip route add default via 10.42.1.1');
    r.sh(
      'ip addr add 10.42.9.1/24 dev ra && ip link set ra up && ip addr add 10.42.1.1/24 dev rb && ip link set rb up' +
        ' && sysctl -qw net.ipv4.ip_forward=1 && iptables -w -P FORWARD DROP',
    );
    return { a, r, b, destroy };
  } catch (e) {
    destroy();
    throw e;
  }
}

const pings = (a: TestNamespace) =>
  spawnSync('ip', ['netns', 'exec', a.name, 'ping', '-c', '1', '-W', '1', '10.42.1.2']).status === 0;

test(
  "iptables' FORWARD policy DROP: a forwarded ping goes through with the nftables backend's rules, not without them, nor with Kilo's table alone",
  { skip: skipNoNetns },
  async (t) => {
    const n = routed();
    t.after(() => n.destroy());
    assert.equal(pings(n.a), false, 'FORWARD DROP drops it before Kilo');
    // Kilo's table alone: its accept ends only its own base chain, iptables' FORWARD still drops.
    const tableOnly = new LinuxNftablesTables(n.r.exec, { iptables: false });
    await tableOnly.reconcile(planA());
    assert.equal(pings(n.a), false, "Kilo's nftables accept alone does not get past iptables' DROP");
    await tableOnly.cleanup();
    const tables = new LinuxNftablesTables(n.r.exec);
    await tables.reconcile(planA());
    assert.equal(pings(n.a), true, "with Kilo's accepts also in iptables the ping is forwarded");
    await tables.cleanup();
    assert.equal(pings(n.a), false, 'clean-up took them out again');
  },
);
