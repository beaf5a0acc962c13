/**
 * Dual-stack for real: the built `kg apply` in three network namespaces joined by one "internet"
 * bridge, each running wireguard-go, in cross granularity with `--subnet 10.4.0.0/16,fd4b::/64`.
 * dual-1 and dual-2 have an underlay of both families; v6-only has an IPv6 underlay alone (Kilo's
 * annotations hold its IPv6 values). Each node holds its pod addresses of both families on a
 * veth pod0, and every node pings every other's pod addresses over IPv4 and IPv6 through kilo0:
 * IPv4 to and from v6-only travels inside an IPv6 tunnel.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Annotation } from '../../src/model/annotations.js';
import type { KubeObject } from '../../src/model/parse.js';
import { node } from '../helpers/cluster.js';
import { skipNoNetns } from '../helpers/netns.js';
import { Lab, oraclePlan, type LabNode } from './dataplane-lab.js';

const flags = ['--mesh-granularity', 'cross', '--encapsulate', 'never', '--subnet', '10.4.0.0/16,fd4b::/64'];

interface Spec {
  n: number;
  underlay: 'dual' | 6;
}

const specs: Record<string, Spec> = {
  'dual-1': { n: 1, underlay: 'dual' },
  'dual-2': { n: 2, underlay: 'dual' },
  'v6-only': { n: 3, underlay: 6 },
};

const pods = (n: number) => ({ v4: `10.42.${n}.1`, v6: `fd42:${n}::1` });

function clusterOf(nodes: readonly LabNode[]): KubeObject[] {
  return nodes.map((l) => {
    const { n, underlay } = specs[l.name]!;
    const v6 = { internal: `fd10:${n}::1/64`, endpoint: `[2001:db8:30::${n}]:51820` };
    return node(l.name, {
      location: l.name,
      key: l.publicKey,
      podCIDRs: [`10.42.${n}.0/24`, `fd42:${n}::/64`],
      ...(underlay === 6
        ? { internalIP: v6.internal, endpoint: v6.endpoint }
        : {
            internalIP: `192.168.${n}.1/24`,
            endpoint: `172.30.0.${n}:51820`,
            annotations: { [Annotation.internalIPv6]: v6.internal, [Annotation.endpointIPv6]: v6.endpoint },
          }),
    });
  });
}

test(
  'dual-stack: three nodes (one on an IPv6-only underlay) reach each other’s pods over IPv4 and IPv6 through kilo0',
  { skip: skipNoNetns },
  async (t) => {
    const lab = new Lab();
    t.after(() => lab.destroy());
    const hub = lab.node('internet');
    hub.ns.sh('ip link add br0 type bridge && ip link set br0 up');
    const nodes = Object.keys(specs).map((name) => lab.node(name));
    for (const l of nodes) {
      const { n, underlay } = specs[l.name]!;
      l.ns.sh(`ip link add pub0 type veth peer name h${n} netns ${hub.ns.name}`);
      hub.ns.sh(`ip link set h${n} master br0 && ip link set h${n} up`);
      l.ns.sh(
        [
          ...(underlay === 'dual' ? [`ip addr add 172.30.0.${n}/24 dev pub0`] : []),
          `ip -6 addr add 2001:db8:30::${n}/64 dev pub0 nodad`,
          'ip link set pub0 up',
          // The private NIC holding the internal IPs, and the pods' addresses (each a veth pair: no dummy module here).
          'ip link add lan0 type veth peer name lan0p && ip link set lan0 up && ip link set lan0p up',
          ...(underlay === 'dual' ? [`ip addr add 192.168.${n}.1/24 dev lan0`] : []),
          `ip -6 addr add fd10:${n}::1/64 dev lan0 nodad`,
          'ip link add pod0 type veth peer name pod0p && ip link set pod0 up && ip link set pod0p up',
          `ip addr add ${pods(n).v4}/24 dev pod0 && ip -6 addr add ${pods(n).v6}/64 dev pod0 nodad`,
        ].join(' && '),
      );
    }
    const file = lab.writeCluster(clusterOf(nodes));

    const plans = new Map(nodes.map((l) => [l.name, oraclePlan(file, l.name, flags)]));
    // The plan a v6-only node dials: IPv6 endpoints only; a dual-stack pair: IPv4.
    const endpoints = (from: string) =>
      plans
        .get(from)!
        .peers.map((p) => `${p.names[0]} ${p.endpoint}`)
        .sort();
    assert.deepEqual(endpoints('v6-only'), ['dual-1 [2001:db8:30::1]:51820', 'dual-2 [2001:db8:30::2]:51820']);
    assert.deepEqual(endpoints('dual-1'), ['dual-2 172.30.0.2:51820', 'v6-only [2001:db8:30::3]:51820']);

    for (const l of nodes) {
      const run = await lab.apply(l, file, flags);
      assert.equal(run.status, 0, `kg apply on ${l.name} exits 0\n${run.stderr}`);
      assert.deepEqual(run.errors, [], `${l.name}: no errors logged`);
      const addresses = l.ns.sh('ip -o addr show dev kilo0');
      const [wg4, wg6] = plans.get(l.name)!.wireGuardIPs!;
      assert.ok(addresses.includes(` ${wg4} `) && addresses.includes(` ${wg6} `), `${l.name} kilo0: ${addresses}`);
    }

    const ping = (from: LabNode, src: string, dst: string) =>
      // The first packet waits for the handshake; retries absorb a slow, loaded machine.
      from.ns.sh(
        `for i in 1 2 3; do ping -c 1 -W 3 -I ${src} ${dst} >/dev/null && exit 0; done; ping -c 1 -W 3 -I ${src} ${dst}`,
      );
    for (const a of nodes) {
      for (const b of nodes) {
        if (a === b) continue;
        const [pa, pb] = [pods(specs[a.name]!.n), pods(specs[b.name]!.n)];
        await t.test(`${a.name} → ${b.name}: pod to pod over IPv4 and IPv6`, () => {
          ping(a, pa.v4, pb.v4);
          ping(a, pa.v6, pb.v6);
        });
      }
    }

    await t.test('the packets went through kilo0: each node has a handshake with both others', () => {
      for (const l of nodes) {
        const handshakes = l.ns
          .sh('wg show kilo0 latest-handshakes')
          .trim()
          .split('\n')
          .map((line) => Number(line.split('\t')[1]));
        assert.equal(handshakes.length, 2, l.name);
        assert.ok(
          handshakes.every((h) => h > 0),
          `${l.name}: ${handshakes.join(' ')}`,
        );
      }
      // v6-only has no IPv4 underlay at all: its IPv4 pod traffic went inside the IPv6 tunnels.
      const v6 = nodes.find((l) => l.name === 'v6-only')!;
      assert.equal(v6.ns.sh('ip -4 -o addr show dev pub0').trim(), '');
      const wgEndpoints = v6.ns.sh('wg show kilo0 endpoints');
      assert.ok(!/\t\d+\.\d+\.\d+\.\d+:/.test(wgEndpoints), wgEndpoints);
    });
  },
);
