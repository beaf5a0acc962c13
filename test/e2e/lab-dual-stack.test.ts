/**
 * The lab in dual-stack (`kg lab up --ip-family dual --ipv6-only-location 3`), real agents, every
 * granularity on ONE lab (restartAgents switches it, as an operator's rollout would): 3 locations
 * × 2 nodes, location 2 behind a gateway that NATs IPv4 and lets in only replies over IPv6,
 * location 3 with only IPv6 on its LAN and uplink, and a dual-stack Peer. Every pod reaches every
 * pod over IPv4 and over IPv6, by ICMP and by TCP, and the Peer every pod; IPv4 to and from
 * location 3 travels inside IPv6 tunnels, and its mates reach each other's IPv4 pods over their
 * IPv6 LAN.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Lab } from '../../packages/lab/src/lab.js';
import { routerNs } from '../../packages/lab/src/layout.js';
import { formatMatrix, ping } from '../../packages/lab/src/probe.js';
import { startTcpServers, tcpPairs } from '../../packages/lab/src/tcp.js';
import { eventually, skipLab, upLab } from './lab-helpers.js';

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
        }
      },
    );
  },
);
