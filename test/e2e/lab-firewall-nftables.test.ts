/**
 * The lab with real agents run with --firewall=nftables (issue 33), in every granularity: every
 * pod reaches every pod and the Peer every pod, each node holds Kilo's table `inet kilo` and nothing of Kilo's in
 * iptables (the lab's nodes have no DROP policy). Then the backend switched on running agents,
 * iptables → nftables → iptables, each time beside a plain restart, with a ping at 10/s across
 * locations: the other backend's rules gone, the loss of a switch printed beside a restart's.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, test } from 'node:test';
import type { Lab } from '../../packages/lab/src/lab.js';
import { kiloIptables, kiloNftables } from '../../packages/lab/src/observe.js';
import { formatMatrix } from '../../packages/lab/src/probe.js';
import { skipLab, upLab } from './lab-helpers.js';

const nftables = ['--firewall=nftables'];
const iptables = ['--firewall=iptables'];

function assertBackend(lab: Lab, backend: 'nftables' | 'iptables'): void {
  for (const n of lab.nodes) {
    const table = kiloNftables(n.ns);
    const ipt = kiloIptables(n.ns);
    if (backend === 'nftables') {
      assert.ok(table.includes('table inet kilo {'), `${n.name}: Kilo's table inet kilo:\n${table.join('\n')}`);
      assert.ok(
        table.some((l) => l.includes('masquerade')),
        `${n.name}: the table masquerades:\n${table.join('\n')}`,
      );
      assert.deepEqual(ipt, [], `${n.name}: nothing of Kilo's in iptables`);
    } else {
      assert.deepEqual(table, [], `${n.name}: no table inet kilo`);
      assert.ok(
        ipt.some((l) => l.startsWith(':KILO-NAT')),
        `${n.name}: Kilo's iptables chains:\n${ipt.join('\n')}`,
      );
    }
  }
}

describe('lab: --firewall=nftables, every granularity', { skip: skipLab, timeout: 1_000_000 }, () => {
  for (const granularity of ['location', 'full', 'cross', 'subnet'] as const) {
    test(
      `${granularity}: every pod reaches every pod and the Peer every pod; inet kilo on every node, no KILO- chain in iptables`,
      { timeout: 240_000 },
      async (t) => {
        const lab = await upLab(t, { granularity, agentFlags: nftables });
        const { matrix, ms } = await lab.converge(120_000);
        console.log(
          `${granularity}, nftables: converged in ${(ms / 1000).toFixed(1)} s after the agents started\n${formatMatrix(matrix)}`,
        );
        assertBackend(lab, 'nftables');
      },
    );
  }
});

/** Pings at 10/s from one pod to another while `during` runs, and 5 s after: [sent, lost]. */
async function lossDuring(lab: Lab, during: () => Promise<unknown>): Promise<[number, number]> {
  const [src, dst] = [lab.node('loc1-n1'), lab.node('loc2-n1')];
  const pinger = spawn('ip', ['netns', 'exec', src.podNs, 'ping', '-n', '-i', '0.1', '-W', '1', dst.podIP], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  pinger.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
  const done = new Promise<void>((resolve) => pinger.on('close', () => resolve()));
  try {
    await new Promise((r) => setTimeout(r, 2000));
    await during();
    await new Promise((r) => setTimeout(r, 5000));
  } finally {
    pinger.kill('SIGINT');
    await done;
  }
  const m = /(\d+) packets transmitted, (\d+) received/.exec(out);
  assert.ok(m, `ping's summary:\n${out.slice(-500)}`);
  return [Number(m[1]), Number(m[1]) - Number(m[2])];
}

describe('lab: the firewall backend switched on running agents', { skip: skipLab, timeout: 1_200_000 }, () => {
  // --clean-up=true (the default): each agent removes its state on SIGTERM, the new one starts
  // from nothing; false: the new agent finds the old backend's rules and must remove them.
  for (const cleanUp of [true, false]) {
    test(
      `iptables → nftables → iptables (cross, --clean-up=${cleanUp}): the other backend's rules gone, a ping at 10/s loses no more than a plain restart`,
      { timeout: 600_000 },
      async (t) => {
        const flags = (f: string[]) => [`--clean-up=${cleanUp}`, ...f];
        const lab = await upLab(t, { granularity: 'cross', agentFlags: flags(iptables) });
        await lab.converge(120_000);
        assertBackend(lab, 'iptables');
        const figures: string[] = [];
        const restart = async (what: string, f: string[]): Promise<number> => {
          const [sent, lost] = await lossDuring(lab, () => lab.restartAgents('cross', flags(f)));
          figures.push(`${what}: ${sent} sent, ${lost} lost`);
          await lab.converge(60_000);
          return lost;
        };
        const plainIptables = await restart('restart, iptables', iptables);
        const toNftables = await restart('switch iptables → nftables', nftables);
        assertBackend(lab, 'nftables');
        const plainNftables = await restart('restart, nftables', nftables);
        const toIptables = await restart('switch nftables → iptables', iptables);
        assertBackend(lab, 'iptables');
        console.log(
          `every agent restarted (SIGTERM, --clean-up=${cleanUp}), ping every 0.1 s across locations:\n  ${figures.join('\n  ')}`,
        );
        // A restart's loss varies by a few packets from one to the next on a loaded machine.
        const slack = 5;
        const worstRestart = Math.max(plainIptables, plainNftables);
        assert.ok(toNftables <= worstRestart + slack, figures.join('; '));
        assert.ok(toIptables <= worstRestart + slack, figures.join('; '));
      },
    );
  }
});
