/**
 * The lab with real agents (cross, 2 locations × 2 nodes, location 2 behind NAT, a Peer) while
 * the cluster changes under it: a node joins and leaves, the Peer goes and comes back, an agent
 * is killed and restarted without clean-up while traffic flows across locations.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import type { Lab } from '../../packages/lab/src/lab.js';
import { peerAllowedIP, peerNs } from '../../packages/lab/src/layout.js';
import { ping } from '../../packages/lab/src/probe.js';
import { run } from '../../packages/lab/src/sh.js';
import { eventually, nodeKey, skipLab, upLab, wgPeers } from './lab-helpers.js';

const peerIP = peerAllowedIP.split('/')[0]!;

/**
 * Routes a node has to a destination (any table); through a next-hop object as `nhid` without its
 * id (`ip route` prints the next hop's gateway and device after it), which a clean-up renumbers.
 */
const routesTo = (lab: Lab, node: string, dst: string) =>
  run(['ip', '-n', lab.node(node).ns, 'route', 'show', 'table', 'all', 'to', dst])
    .replace(/\bnhid \d+/g, 'nhid')
    .trim();

/** PIDs of the wireguard-go processes inside a node's namespace. */
function wireGuardGoPids(lab: Lab, node: string): number[] {
  return run(['ip', 'netns', 'pids', lab.node(node).ns])
    .split('\n')
    .map(Number)
    .filter((pid) => pid > 0)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'wireguard-go';
      } catch {
        return false;
      }
    })
    .sort();
}

describe('lab: nodes and Peers come and go, an agent crashes', { skip: skipLab, timeout: 900_000 }, () => {
  test('cross, 2 locations (one behind NAT) × 2 nodes and a Peer', { timeout: 800_000 }, async (t) => {
    const lab = await upLab(t, { granularity: 'cross' });
    await lab.converge(120_000);

    await t.test('a node joins: every pod reaches its pod and it reaches every pod (time printed)', async () => {
      const { node, createdAt } = await lab.addNode(1);
      await lab.waitAgentsSynced(new Map([[node.name, 0]]));
      const synced = Date.now();
      const pods = await lab.converge(120_000, { peer: false });
      // The Peer's owner must re-run kgctl showconf to learn of the new node (the lab does every 5 s).
      const all = await lab.converge(120_000);
      const s = (t: number) => `${((t - createdAt) / 1000).toFixed(1)} s`;
      console.log(
        `new Node object ${node.name}: its agent read the cluster after ${s(synced)}, every pod reached every pod after ${s(pods.at)}, the Peer every pod after ${s(all.at)}`,
      );
    });

    await t.test(
      'a node leaves (Node deleted): the others drop its peer and routes and still reach each other',
      async () => {
        const gone = lab.node('loc1-n3');
        const key = await nodeKey(lab, gone.name);
        await lab.removeNode(gone.name);
        await eventually(`no node keeps a WireGuard peer or a route for ${gone.name}`, () =>
          lab.nodes.every((n) => !wgPeers(lab, n.name).includes(key) && routesTo(lab, n.name, gone.podCIDR) === ''),
        );
        await lab.converge(60_000);
      },
    );

    await t.test('the Peer is removed: every node drops it; added again: it reaches every pod', async () => {
      const key = lab.state.state.peerPublicKey!;
      await lab.removePeer();
      await eventually('no node keeps the Peer as a WireGuard peer or routes to it', () =>
        lab.nodes.every((n) => !wgPeers(lab, n.name).includes(key) && routesTo(lab, n.name, peerIP) === ''),
      );
      assert.equal(
        await ping(peerNs(lab.options.prefix), lab.nodes[0]!.podIP, { source: peerIP, waitSeconds: 2 }),
        false,
        'the removed Peer reaches no pod',
      );
      await lab.addPeer();
      await lab.converge(60_000);
    });

    await t.test(
      'a Kilo route deleted by hand: the routing monitor reports it and the agent puts it back at once',
      async () => {
        const [node, remote] = [lab.node('loc1-n1'), lab.node('loc2-n1')];
        const before = routesTo(lab, node.name, remote.podCIDR);
        assert.match(before, /proto 107/, `${node.name} routes ${remote.podCIDR}`);
        const offset = lab.agentLogSize(node.name);
        run(['ip', '-n', node.ns, 'route', 'del', remote.podCIDR, 'proto', '107']);
        // The route through kilo0 is deleted (the first of the key); the fail-closed guard's blackhole stays.
        const guard = before
          .split('\n')
          .filter((l) => l.startsWith('blackhole '))
          .join('\n');
        assert.equal(routesTo(lab, node.name, remote.podCIDR), guard, 'deleted');
        // Not the resync timer (30 s): the monitor's report makes the next pass read the machine.
        await eventually(`${node.name}'s agent noticed the foreign change and restored the route`, () => {
          const log = readFileSync(`${lab.nodeDir(node.name)}/kg.log`)
            .subarray(offset)
            .toString('utf8');
          return log.includes('routing changed outside kilo') && routesTo(lab, node.name, remote.podCIDR) === before;
        });
        await lab.converge(60_000);
      },
    );

    await t.test(
      'an agent killed (SIGKILL) and restarted with --clean-up=false loses at most 1 s of a ping across locations',
      async () => {
        const [src, dst] = [lab.node('loc1-n1'), lab.node('loc2-n1')];
        const tunnels = wireGuardGoPids(lab, src.name);
        assert.equal(tunnels.length, 1, `one wireguard-go in ${src.name}`);
        const pinger = spawn('ip', ['netns', 'exec', src.podNs, 'ping', '-n', '-i', '0.1', '-W', '1', dst.podIP], {
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        pinger.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
        const done = new Promise<void>((resolve) => pinger.on('close', () => resolve()));
        t.after(() => {
          if (pinger.exitCode === null) pinger.kill('SIGKILL');
        });
        await new Promise((r) => setTimeout(r, 2000));
        const offsets = new Map([[src.name, lab.agentLogSize(src.name)]]);
        await lab.stopAgent(src.name, 'SIGKILL');
        lab.startAgent(src.name, { cleanUp: false });
        await lab.waitAgentsSynced(offsets);
        // A few reconciles' worth of time after the new agent took over.
        await new Promise((r) => setTimeout(r, 5000));
        pinger.kill('SIGINT');
        await done;
        const m = /(\d+) packets transmitted, (\d+) received/.exec(out);
        assert.ok(m, `ping's summary:\n${out.slice(-500)}`);
        const [sent, received] = [Number(m[1]), Number(m[2])];
        console.log(
          `ping every 0.1 s across locations while ${src.name}'s agent was killed and restarted: ${sent} sent, ${sent - received} lost`,
        );
        assert.ok(sent >= 50, `the ping ran through the restart (${sent} sent)`);
        assert.ok(sent - received <= 10, `at most 1 s of ping lost: ${sent - received} of ${sent} packets`);
        assert.deepEqual(
          wireGuardGoPids(lab, src.name),
          tunnels,
          'the restarted agent adopted the running wireguard-go',
        );
        await lab.converge(60_000);
      },
    );
  });
});
