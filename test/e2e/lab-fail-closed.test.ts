/**
 * The fail-closed guard in the lab (docs/fail-closed.md): a pod pings a remote pod 10 times a
 * second with a marker in the payload while tcpdump watches the node's uplink (pub0) and LAN
 * (lan0) for that ping in the clear, and the tunnel is taken away in turn: wireguard-go SIGKILLed,
 * kilo0 deleted, kg SIGKILLed (kilo0 deleted while it is dead), kg stopped with --clean-up=false
 * (wireguard-go SIGKILLed while it is stopped) and started again. Not one packet may leave in the
 * clear; traffic must resume by itself each time (a generous bound, no timing assert beyond it).
 * Prints how long the traffic stopped for each fault. The capture takes every ICMP packet to the
 * remote pod's address, the marked pings and anything else. The control: the same fault with kg dead
 * and the guard removed by hand leaks, and the capture sees it.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import type { Lab } from '../../packages/lab/src/lab.js';
import { longestLoss, spawnPing, type Sample } from '../../packages/lab/src/chaos/traffic.js';
import { capture } from '../../packages/lab/src/observe.js';
import { inNs, run, sleep } from '../../packages/lab/src/sh.js';
import { skipLab, upLab } from './lab-helpers.js';

const marker = 'KILO-GUARD-36';
const intervalMs = 100;
const resumeBoundMs = 90_000;

/** `ping -i 0.1` with the marker as its pattern; each sequence number's outcome with ping's own clock. */
function markedPing(ns: string, dst: string): { replies: Sample[]; stop(): void } {
  const pattern = Buffer.from(marker).toString('hex');
  const argv = inNs(ns, ['stdbuf', '-oL', 'ping', '-n', '-D', '-O', '-i', '0.1', '-W', '1', '-p', pattern, dst]);
  const replies: Sample[] = [];
  const child = spawnPing(argv, replies);
  return { replies, stop: () => void child.kill('SIGKILL') };
}

/** PIDs in a namespace whose command is `name` (wireguard-go is started detached by kg). */
function pidsOf(ns: string, name: string): number[] {
  return run(['ip', 'netns', 'pids', ns])
    .split('\n')
    .filter(Boolean)
    .map(Number)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === name;
      } catch {
        return false;
      }
    });
}

function killWireGuardGo(lab: Lab, node: string): void {
  const pids = pidsOf(lab.node(node).ns, 'wireguard-go');
  assert.ok(pids.length > 0, `wireguard-go runs on ${node}`);
  for (const pid of pids) process.kill(pid, 'SIGKILL');
}

const deleteKilo0 = (lab: Lab, node: string): void => void run(['ip', '-n', lab.node(node).ns, 'link', 'del', 'kilo0']);

interface Fault {
  what: string;
  perform(lab: Lab, node: string): Promise<void>;
}

/** kg stopped by `signal`, the tunnel taken away while it is away (3 s), kg started with --clean-up=false. */
async function whileAgentAway(lab: Lab, node: string, signal: NodeJS.Signals, takeAway: () => void): Promise<void> {
  await lab.stopAgent(node, signal);
  takeAway();
  await sleep(3000);
  lab.startAgent(node, { cleanUp: false });
}

const faults: Fault[] = [
  { what: 'wireguard-go SIGKILLed', perform: async (lab, n) => killWireGuardGo(lab, n) },
  { what: 'kilo0 deleted', perform: async (lab, n) => deleteKilo0(lab, n) },
  {
    what: 'kg SIGKILLed, kilo0 deleted while it is dead (3 s), kg started with --clean-up=false',
    perform: (lab, n) => whileAgentAway(lab, n, 'SIGKILL', () => deleteKilo0(lab, n)),
  },
  {
    what: 'kg stopped (SIGTERM, --clean-up=false), wireguard-go SIGKILLed meanwhile (3 s), kg started again',
    perform: (lab, n) => whileAgentAway(lab, n, 'SIGTERM', () => killWireGuardGo(lab, n)),
  },
];

describe('lab: fail closed', { skip: skipLab, timeout: 900_000 }, () => {
  test('nothing meant for the tunnel leaves in the clear while it is away; traffic resumes by itself', async (t) => {
    const lab = await upLab(t, {
      locations: 2,
      nodesPerLocation: 1,
      granularity: 'location',
      natLocation: null,
      peer: false,
    });
    await lab.converge(180_000);
    const [a, b] = lab.nodes as [(typeof lab.nodes)[0], (typeof lab.nodes)[0]];
    const filter = `icmp and host ${b.podIP}`;

    const uplink = await capture(a.ns, 'pub0', filter);
    const lan = await capture(a.ns, 'lan0', filter);
    const ping = markedPing(a.podNs, b.podIP);
    t.after(() => ping.stop());
    const figures: string[] = [];
    try {
      // Traffic flows before the first fault.
      await waitReply(ping.replies, Date.now());
      for (const f of faults) {
        await sleep(2000);
        const from = Date.now();
        await f.perform(lab, a.name);
        const done = Date.now();
        const resumed = await waitReply(ping.replies, done);
        figures.push(
          `${f.what}: traffic stopped ${longestLoss(ping.replies, from, resumed, intervalMs)} ms, first reply ${resumed - done} ms after the fault was over`,
        );
      }
      const [leakedUplink, leakedLan] = [await uplink.stop(), await lan.stop()];
      console.log(`fail closed on ${a.name} (pings every ${intervalMs} ms):\n  ${figures.join('\n  ')}`);
      assert.deepEqual(leakedUplink, [], 'no ping to the remote pod left by the uplink in the clear');
      assert.deepEqual(leakedLan, [], 'no ping to the remote pod left by the LAN in the clear');

      // The control: the same fault without the guard (kg dead, its blackholes removed by hand)
      // leaks, and the capture sees it.
      await sleep(2000);
      await lab.stopAgent(a.name, 'SIGKILL');
      run(['ip', '-n', a.ns, 'route', 'flush', 'table', 'all', 'proto', '107', 'type', 'blackhole']);
      const leak = await capture(a.ns, 'pub0', filter);
      deleteKilo0(lab, a.name);
      await sleep(2000);
      const leaked = await leak.stop();
      lab.startAgent(a.name, { cleanUp: false });
      console.log(`without the guard: ${leaked.length} pings to the remote pod left by the uplink in 2 s`);
      assert.ok(leaked.length > 0, 'without the guard the pings leave in the clear, and the capture sees them');
      await waitReply(ping.replies, Date.now());
    } finally {
      ping.stop();
    }
  });
});

/** When the first reply after `since` came (ping's clock); fails after the generous bound. */
async function waitReply(replies: readonly Sample[], since: number): Promise<number> {
  const deadline = Date.now() + resumeBoundMs;
  for (;;) {
    const r = replies.find((x) => x.ok && x.at > since);
    if (r) return r.at;
    if (Date.now() > deadline)
      throw new Error(`no reply within ${resumeBoundMs} ms after ${new Date(since).toISOString()}`);
    await sleep(50);
  }
}
