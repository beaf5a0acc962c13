/**
 * The lab in dual-stack (`kg lab up --ip-family dual --ipv6-only-location 3`), real agents, every
 * granularity on ONE lab (restartAgents switches it, as an operator's rollout would): 3 locations
 * × 2 nodes, location 2 behind a gateway that NATs IPv4 and lets in only replies over IPv6,
 * location 3 with only IPv6 on its LAN and uplink, and a dual-stack Peer. Every pod reaches every
 * pod over IPv4 and over IPv6, by ICMP and by TCP, and the Peer every pod; IPv4 to and from
 * location 3 travels inside IPv6 tunnels, and its mates reach each other's IPv4 pods over their
 * IPv6 LAN; packets take the paths the IPv4 lab asserts (checkPaths).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Lab } from '../../packages/lab/src/lab.js';
import { routerNs } from '../../packages/lab/src/layout.js';
import { formatMatrix, ping } from '../../packages/lab/src/probe.js';
import { startTcpServers, tcpPairs } from '../../packages/lab/src/tcp.js';
import { eventually, skipLab, upLab } from './lab-helpers.js';
import { checkCrossPaths, checkLocationPaths } from './lab-paths.js';

/** Every pair (pods and the Peer, both families) answers over TCP; the failing ones after `timeoutMs`. */
async function tcpEverywhere(lab: Lab, timeoutMs: number): Promise<string[]> {
  let pending = lab.pairs(true);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await tcpPairs(pending);
    pending = pending.filter((_, i) => !ok[i]);
    if (pending.length === 0 || Date.now() > deadline) return pending.map(({ s, d }) => `${s.name}→${d.name}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/**
 * The paths the IPv4 lab asserts (lab-paths.ts), in IPv6 and across the IPv6-only location:
 * - location: location 1's non-leader reaches another location's IPv6 pods through its leader;
 * - cross: loc1's mates reach each other's IPv6 pods over the LAN, never through kilo0, and loc1-n1
 *   reaches loc3-n1's pods through kilo0, straight into loc3-n1's own kilo0, in both families; the
 *   tunnel between them runs over IPv6 (loc1-n1's IPv6 address carries the UDP, loc3-n1 has no IPv4
 *   underlay: checkIPv6Underlay), so IPv4 pod traffic crosses the underlay inside IPv6.
 * The two families' cross checks run side by side: each captures only its own pods' packets.
 */
async function checkPaths(lab: Lab, granularity: string): Promise<void> {
  if (granularity === 'location') await checkLocationPaths(lab, { family: 6 });
  if (granularity !== 'cross') return;
  const tunnelHost = lab.node('loc1-n1').ipv6!.publicIP;
  await Promise.all(
    ([6, 4] as const).map((family) => checkCrossPaths(lab, { family, remote: 'loc3-n1', tunnelHost, direct: true })),
  );
}

/** Location 3 has no IPv4 underlay: its tunnels all run over IPv6, and its LAN carries IPv4 pods via inet6. */
function checkIPv6Underlay(lab: Lab, mates: boolean): void {
  const [a, b] = lab.nodes.filter((n) => n.location === 3);
  for (const n of [a!, b!]) {
    assert.equal(lab.exec(n.name, ['ip', '-4', '-o', 'addr', 'show', 'dev', 'lan0']).stdout.trim(), '');
    const endpoints = lab.exec(n.name, ['wg', 'show', 'kilo0', 'endpoints']).stdout;
    assert.ok(!/\t\d+\.\d+\.\d+\.\d+:/.test(endpoints), `${n.name} dials no IPv4 endpoint:\n${endpoints}`);
  }
  // Mates in one group route to each other in the clear: IPv4 pods through the IPv6 LAN (RFC 5549).
  const route = lab.routeGet(a!.name, b!.podIP);
  if (mates) assert.match(route, new RegExp(`via inet6 ${b!.ipv6!.lanIP} dev lan0`), route);
  else assert.match(route, / dev kilo0 /, route);
}

describe(
  'lab: dual-stack, every granularity, a NAT location, an IPv6-only location and a Peer',
  { skip: skipLab, timeout: 600_000 },
  () => {
    test(
      'every pod reaches every pod, and the Peer every pod, over IPv4 and IPv6 (ICMP and TCP)',
      { timeout: 580_000 },
      async (t) => {
        const lab = await upLab(t, {
          locations: 3,
          nodesPerLocation: 2,
          natLocation: 2,
          ipFamily: 'dual',
          ipv6OnlyLocation: 3,
          granularity: 'location',
        });
        startTcpServers(lab);
        // The NAT location's gateway lets in only replies over IPv6, as a home router does: its nodes'
        // global addresses are not reachable from outside until they dial out.
        const behind = lab.nodes.find((n) => n.location === 2)!;
        assert.equal(await ping(routerNs(lab.options.prefix), behind.ipv6!.publicIP, { waitSeconds: 2 }), false);
        for (const granularity of ['location', 'full', 'cross', 'subnet'] as const) {
          if (granularity !== lab.options.granularity) {
            await lab.restartAgents(granularity);
            // Its owner re-imports `kgctl showconf peer` after the change: from a fresh tunnel (peer.ts).
            await lab.resetPeer();
          }
          const { matrix, ms } = await lab.converge(150_000, { peer: true });
          console.log(
            `${granularity}: every pair answered ping within ${(ms / 1000).toFixed(1)} s\n${formatMatrix(matrix)}`,
          );
          const failing = await tcpEverywhere(lab, 60_000);
          assert.deepEqual(failing, [], `${granularity}: TCP pairs that never got an answer`);
          await eventually(
            `${granularity}: location 3's tunnels run over IPv6`,
            () => {
              checkIPv6Underlay(lab, granularity !== 'full');
              return true;
            },
            20_000,
          ).catch(() => undefined);
          checkIPv6Underlay(lab, granularity !== 'full');
          const started = Date.now();
          await checkPaths(lab, granularity);
          console.log(`${granularity}: paths checked in ${((Date.now() - started) / 1000).toFixed(1)} s`);
        }
      },
    );
  },
);
