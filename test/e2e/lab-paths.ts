/**
 * The paths packets take in the lab, as the granularity promises them: captured with tcpdump and
 * counted on kilo0, never timed. Shared by the IPv4 lab (lab-granularity) and the dual-stack lab
 * (lab-dual-stack), which runs them per family: `family` picks the node's addresses of that family.
 */
import assert from 'node:assert/strict';
import type { Lab } from '../../packages/lab/src/lab.js';
import type { LabNode } from '../../packages/lab/src/layout.js';
import { routerNs } from '../../packages/lab/src/layout.js';
import { capture, counters } from '../../packages/lab/src/observe.js';
import { ping } from '../../packages/lab/src/probe.js';

export type Family = 4 | 6;

/** A node's pod and LAN addresses of one family (IPv4: the lab's usual fields). */
export function addressesOf(n: LabNode, family: Family): { podIP: string; lanIP: string } {
  if (family === 4) return { podIP: n.podIP, lanIP: n.lanIP };
  assert.ok(n.ipv6, `${n.name} has IPv6 addresses`);
  return { podIP: n.ipv6.podIP, lanIP: n.ipv6.lanIP };
}

/** tcpdump's protocol filter of ICMP echoes of a family. */
const icmpOf = (family: Family) => (family === 4 ? 'icmp' : 'icmp6');

/** ICMP echo requests or replies among tcpdump's lines (`ICMP echo request`, `ICMP6, echo request`). */
export const icmpEcho = (lines: string[], kind: 'request' | 'reply') =>
  lines.filter((l) => new RegExp(`ICMP6?,? echo ${kind}`).test(l)).length;

/**
 * Cross granularity: loc1-n1 → loc1-n2 goes in the clear over the LAN, nothing through WireGuard;
 * loc1-n1 → `remote` goes through kilo0 and the internet sees only WireGuard's UDP of `tunnelHost`
 * (loc1-n1's public address of the tunnel's outer family). `direct`: the packets also come out of
 * `remote`'s own kilo0, so no other node carried them.
 */
export async function checkCrossPaths(
  lab: Lab,
  o: { family?: Family; remote?: string; tunnelHost?: string; direct?: boolean } = {},
): Promise<void> {
  const family = o.family ?? 4;
  const [a, b, remote] = [lab.node('loc1-n1'), lab.node('loc1-n2'), lab.node(o.remote ?? 'loc2-n1')];
  const [a_, b_, remote_] = [addressesOf(a, family), addressesOf(b, family), addressesOf(remote, family)];
  // Inside a location: in the clear over the LAN, nothing through WireGuard.
  // Captured, not counted: the agents' own health probes go through kilo0 at any time.
  const pods = `${icmpOf(family)} and host ${a_.podIP} and host ${b_.podIP}`;
  const tunnels = [await capture(a.ns, 'kilo0', pods), await capture(b.ns, 'kilo0', pods)];
  const lan = await capture(b.ns, 'lan0', pods);
  assert.ok(await ping(a.podNs, b_.podIP, { count: 3 }), `pod of ${a.name} → pod of ${b.name} (IPv${family})`);
  const seen = await lan.stop();
  assert.ok(
    icmpEcho(seen, 'request') >= 1 && icmpEcho(seen, 'reply') >= 1,
    `the LAN carries the pods' ICMP in the clear (IPv${family}):\n${seen.join('\n')}`,
  );
  assert.deepEqual(
    await Promise.all(tunnels.map((c) => c.stop())),
    [[], []],
    `kilo0 of either node saw none of the pods' packets (IPv${family})`,
  );

  // Across locations: the internet sees WireGuard's UDP only, never a pod's packet.
  const tunnelBefore = counters(a.ns, 'kilo0');
  const clear = await capture(routerNs(lab.options.prefix), 'any', `host ${a_.podIP} or host ${remote_.podIP}`);
  const udp = await capture(routerNs(lab.options.prefix), 'any', `udp and host ${o.tunnelHost ?? a.publicIP}`);
  const arriving = o.direct
    ? await capture(remote.ns, 'kilo0', `${icmpOf(family)} and host ${a_.podIP} and host ${remote_.podIP}`)
    : undefined;
  assert.ok(
    await ping(a.podNs, remote_.podIP, { count: 3 }),
    `pod of ${a.name} → pod of ${remote.name} (IPv${family})`,
  );
  const [clearSeen, udpSeen] = [await clear.stop(), await udp.stop()];
  assert.deepEqual(clearSeen, [], `no packet with a pod address crosses the internet (IPv${family})`);
  assert.ok(udpSeen.length >= 6, `WireGuard's UDP crosses the internet (saw ${udpSeen.length} packets)`);
  const tunnelAfter = counters(a.ns, 'kilo0');
  assert.ok(
    tunnelAfter.txPackets >= tunnelBefore.txPackets + 3 && tunnelAfter.rxPackets >= tunnelBefore.rxPackets + 3,
    'the pings went through kilo0',
  );
  if (arriving) {
    const at = await arriving.stop();
    assert.ok(
      icmpEcho(at, 'request') >= 1 && icmpEcho(at, 'reply') >= 1,
      `${remote.name}'s own kilo0 carries the pods' ICMP (IPv${family}): no node between:\n${at.join('\n')}`,
    );
  }
}

/**
 * Location granularity: location 1's non-leader reaches `remote`'s pod through its leader: its
 * route goes via the leader's LAN address of the family, the leader's LAN sees the packets, the
 * non-leader's kilo0 carries none of them and the leader's carries them.
 */
export async function checkLocationPaths(lab: Lab, o: { family?: Family; remote?: string } = {}): Promise<void> {
  const family = o.family ?? 4;
  const objects = await lab.api.list('nodes');
  const wgIP = (name: string) =>
    objects.find((x) => x.metadata?.name === name)?.metadata?.annotations?.['kilo.squat.ai/wireguard-ip'] ?? '';
  const loc1 = lab.nodes.filter((n) => n.location === 1);
  const leaders = loc1.filter((n) => wgIP(n.name) !== '');
  assert.equal(
    leaders.length,
    1,
    `one leader in location 1: ${loc1.map((n) => `${n.name}=${wgIP(n.name) || '-'}`).join(' ')}`,
  );
  const leader = leaders[0]!;
  const other = loc1.find((n) => n !== leader)!;
  const remote = lab.node(o.remote ?? 'loc2-n1');
  const [leader_, other_, remote_] = [
    addressesOf(leader, family),
    addressesOf(other, family),
    addressesOf(remote, family),
  ];
  assert.match(
    lab.routeGet(other.name, remote_.podIP),
    new RegExp(`via ${leader_.lanIP.replaceAll('.', '\\.')} dev lan0`),
    `the non-leader routes to the other location through its leader (IPv${family})`,
  );
  const [otherBefore, leaderBefore] = [counters(other.ns, 'kilo0'), counters(leader.ns, 'kilo0')];
  const lan = await capture(leader.ns, 'lan0', `${icmpOf(family)} and host ${other_.podIP} and host ${remote_.podIP}`);
  assert.ok(
    await ping(other.podNs, remote_.podIP, { count: 3 }),
    `pod of ${other.name} → pod of ${remote.name} (IPv${family})`,
  );
  const seen = await lan.stop();
  assert.ok(
    icmpEcho(seen, 'request') >= 1,
    `the leader receives the non-leader's packets on its LAN (IPv${family}):\n${seen.join('\n')}`,
  );
  assert.deepEqual(counters(other.ns, 'kilo0'), otherBefore, "the non-leader's kilo0 carried nothing");
  assert.ok(
    counters(leader.ns, 'kilo0').txPackets >= leaderBefore.txPackets + 3,
    "the leader's kilo0 carried the packets",
  );
}
