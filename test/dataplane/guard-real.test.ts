/**
 * The fail-closed guard in a namespace, by the kernel's own routing decision: with kilo0 gone, a
 * packet for a destination planned through the tunnel is not routed out of the uplink (priv0, which
 * holds the default route), in either family, in the main table or 1108 (--route-host-traffic).
 * The same plan without its guard leaks: the control that shows the check can fail.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { linuxRoutingTables } from '../../src/dataplane/routes/linux.js';
import { planGuard } from '../../src/mesh/guard.js';
import { hostTable, type PlanRoute } from '../../src/mesh/types.js';
import { skipNoNetns } from '../helpers/netns.js';
import { routesNamespace } from './namespaces.js';
import { ipExec } from './routes-exec.js';

const viaKilo = (dst: string, gw: string | null, table: PlanRoute['table'] = 'main'): PlanRoute => ({
  dst,
  gw,
  dev: 'kilo',
  src: null,
  table,
  onlink: gw !== null,
});

// A leader's routes through kilo: a remote pod CIDR, a Peer's IP, an IPv6 pod CIDR, and a remote
// internal IP in table 1108.
const routes = [
  viaKilo('10.42.2.0/24', '10.4.0.2'),
  viaKilo('10.5.0.1/32', null),
  viaKilo('fd42:2::/64', null),
  viaKilo('192.168.2.5/32', '10.4.0.2', hostTable),
];
// Destinations in them (192.168.2.5 by a rule to table 1108, as --route-host-traffic's rule sends it).
const probes = [['10.42.2.7'], ['10.5.0.1'], ['10.4.0.2'], ['fd42:2::7'], ['192.168.2.5']];

test(
  'kilo0 deleted: nothing planned through it is routed out of the uplink while the guard is there',
  { skip: skipNoNetns },
  async () => {
    const ns = routesNamespace('ktgd');
    try {
      ns.sh(
        [
          'ip route add default via 192.168.1.254 dev priv0',
          'ip -6 route add default via fd00::fe dev priv0',
          `ip rule add to 192.168.2.5 lookup ${hostTable} priority 100`,
        ].join(' && '),
      );
      const tables = linuxRoutingTables(ipExec(ns));
      const devices = { kilo: 'kilo0', private: 'priv0', tunnel: null };
      const guard = planGuard(routes, ['10.4.0.1/16']);
      await tables.reconcile(routes, [], devices, { guard });
      const get = (args: string[]) =>
        spawnSync('ip', ['-n', ns.name, args[0]!.includes(':') ? '-6' : '-4', 'route', 'get', ...args], {
          encoding: 'utf8',
        });
      for (const p of probes) assert.match(get(p).stdout, /dev kilo0/, `${p.join(' ')} goes through kilo0`);

      ns.sh('ip link del kilo0');
      for (const p of probes) {
        const r = get(p);
        assert.notEqual(r.status, 0, `${p.join(' ')}: no route while kilo0 is gone, got: ${r.stdout}`);
        assert.doesNotMatch(r.stdout, /dev priv0/);
      }

      // The control: without the guard the same destinations leave through the uplink.
      await tables.reconcile([], [], devices);
      for (const p of probes) assert.match(get(p).stdout, /dev priv0/, `${p.join(' ')} leaks without the guard`);
    } finally {
      ns.destroy();
    }
  },
);
