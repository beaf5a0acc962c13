/**
 * --wireguard-ip-allocation=stable on real agents and wireguard-go (issue 35), in `cross` and
 * `location`: a location whose name sorts first joins, then another location leaves. Under Kilo's
 * rule the first would renumber every segment; here no existing node's kilo0 address changes, no
 * WireGuard session between existing nodes restarts (each peer stays, its latest handshake and
 * transfer counters never go back), and pings across the mesh lose nothing.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, test, type TestContext } from 'node:test';
import type { Lab } from '../../packages/lab/src/lab.js';
import { internetPrefix, labNode, type LabNode } from '../../packages/lab/src/layout.js';
import { buildNode } from '../../packages/lab/src/network.js';
import { inNodeNs, run } from '../../packages/lab/src/sh.js';
import { Annotation } from '../../src/model/annotations.js';
import { nodeKey, skipLab, upLab } from './lab-helpers.js';

/** The node's kilo0 addresses (`10.4.0.1/16`), "" when it has none. */
const kiloAddress = (lab: Lab, node: string): string =>
  run(['ip', '-n', lab.node(node).ns, '-o', '-4', 'addr', 'show', 'dev', 'kilo0'])
    .split('\n')
    .map((l) => /inet (\S+)/.exec(l)?.[1])
    .filter(Boolean)
    .join(',');

interface PeerSample {
  latestHandshake: number;
  rx: number;
  tx: number;
}

/** `wg show kilo0 dump`'s peer lines by public key (the interface line, with the private key, is skipped). */
function peerSamples(lab: Lab, node: string): Map<string, PeerSample> {
  const lines = run(inNodeNs(lab.node(node).ns, lab.runDir(node), ['wg', 'show', 'kilo0', 'dump'])).split('\n');
  const out = new Map<string, PeerSample>();
  for (const line of lines.slice(1)) {
    const f = line.split('\t');
    if (f.length < 8) continue;
    out.set(f[0]!, { latestHandshake: Number(f[4]), rx: Number(f[5]), tx: Number(f[6]) });
  }
  return out;
}

/**
 * A node in lab location 1's network whose Kilo location (annotation) and name sort before every
 * other: `aa` and `aa-n1`. The lab names its nodes by location number; this one is named by hand.
 */
async function addFirstNode(lab: Lab): Promise<LabNode> {
  const used = new Set(lab.nodes.filter((n) => n.location === 1).map((n) => n.index));
  let index = 1;
  while (used.has(index)) index++;
  const n = {
    ...labNode(lab.options.prefix, 1, index, lab.state.state.nextK, false, lab.options.cluster),
    name: 'aa-n1',
  };
  buildNode(lab.state, lab.options.prefix, n, internetPrefix(lab.options));
  lab.state.state.nodes.push(n);
  lab.state.state.nextK = n.k + 1;
  lab.state.save();
  const object = lab.nodeObject(n);
  object.metadata!.annotations![Annotation.location] = 'aa';
  await lab.api.create('nodes', object);
  lab.startAgent(n.name);
  return n;
}

/** `ping -i 0.2` until stopped; resolves with how many were sent and received. */
function pinger(t: TestContext, ns: string, dst: string): { stop(): Promise<{ sent: number; received: number }> } {
  const p = spawn('ip', ['netns', 'exec', ns, 'ping', '-n', '-i', '0.2', '-W', '2', dst], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  p.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
  const done = new Promise<void>((resolve) => p.on('close', () => resolve()));
  t.after(() => {
    if (p.exitCode === null) p.kill('SIGKILL');
  });
  return {
    async stop() {
      p.kill('SIGINT');
      await done;
      const m = /(\d+) packets transmitted, (\d+) received/.exec(out);
      assert.ok(m, `ping ${dst} from ${ns}: no summary:\n${out.slice(-500)}`);
      return { sent: Number(m[1]), received: Number(m[2]) };
    },
  };
}

for (const granularity of ['cross', 'location'] as const) {
  describe(`lab: stable WireGuard IPs (${granularity})`, { skip: skipLab, timeout: 900_000 }, () => {
    test(
      'a location sorting first joins, another leaves: no address moves, no session restarts, no ping lost',
      { timeout: 800_000 },
      async (t) => {
        const perLocation = granularity === 'cross' ? 2 : 1;
        const lab = await upLab(t, {
          granularity,
          locations: 3,
          nodesPerLocation: perLocation,
          natLocation: null,
          peer: false,
          agentFlags: ['--wireguard-ip-allocation=stable'],
        });
        await lab.converge(180_000);
        const staying = lab.nodes.filter((n) => n.location !== 2).map((n) => n.name);
        const leaving = lab.nodes.filter((n) => n.location === 2).map((n) => n.name);
        const before = new Map(staying.map((n) => [n, kiloAddress(lab, n)]));
        const all = lab.nodes.map((n) => kiloAddress(lab, n.name)).filter(Boolean);
        assert.equal(new Set(all).size, all.length, `one address twice: ${all.join(' ')}`);
        const keys = new Map(await Promise.all(staying.map(async (n) => [n, await nodeKey(lab, n)] as const)));
        // The WireGuard peers between staying nodes: in location granularity every node leads its own.
        const pairs = staying.flatMap((a) =>
          staying
            .filter((b) => lab.node(b).location !== lab.node(a).location)
            .map((b) => ({ on: a, key: keys.get(b)!, of: b })),
        );
        const [s1, s3] = [lab.node(staying[0]!), lab.node(staying[staying.length - 1]!)];
        const pings = [
          pinger(t, s1.podNs, s3.podIP),
          pinger(t, s3.podNs, s1.podIP),
          // The WireGuard IP itself: what users of stable addresses reach.
          pinger(t, s1.ns, before.get(s3.name)!.split('/')[0]!),
        ];

        // Every 0.5 s: each staying node's kilo0 address, and its peers' sessions.
        const problems: string[] = [];
        const last = new Map<string, PeerSample>();
        let samples = 0;
        const sample = () => {
          samples++;
          for (const n of staying) {
            const address = kiloAddress(lab, n);
            if (address !== before.get(n)) problems.push(`${n}'s kilo0 went from ${before.get(n)} to ${address}`);
          }
          const byNode = new Map(staying.map((n) => [n, peerSamples(lab, n)]));
          for (const p of pairs) {
            const now = byNode.get(p.on)!.get(p.key);
            const id = `${p.on}→${p.of}`;
            const prev = last.get(id);
            if (!now) problems.push(`${id}: the WireGuard peer is gone`);
            else if (prev && (now.latestHandshake < prev.latestHandshake || now.rx < prev.rx || now.tx < prev.tx))
              problems.push(`${id}: the session went back: ${JSON.stringify(prev)} → ${JSON.stringify(now)}`);
            else if (now.latestHandshake === 0) problems.push(`${id}: no handshake`);
            if (now) last.set(id, now);
          }
        };
        sample();
        const sampler = setInterval(sample, 500);
        t.after(() => clearInterval(sampler));
        await new Promise((r) => setTimeout(r, 3000));

        const first = await addFirstNode(lab);
        await lab.waitAgentsSynced(new Map([[first.name, 0]]));
        await lab.converge(180_000, { peer: false });
        const joined = kiloAddress(lab, first.name);
        assert.ok(joined !== '' && ![...before.values()].includes(joined), `the new node took ${joined}`);

        for (const n of leaving) await lab.removeNode(n);
        await lab.converge(180_000, { peer: false });
        await new Promise((r) => setTimeout(r, 5000));
        clearInterval(sampler);
        sample();

        const results = await Promise.all(pings.map((p) => p.stop()));
        console.log(
          `${granularity}: ${samples} samples of ${staying.length} nodes' kilo0 and ${pairs.length} sessions; pings sent/lost: ${results
            .map((r) => `${r.sent}/${r.sent - r.received}`)
            .join(', ')}; ${first.name} (location aa) took ${joined}`,
        );
        assert.deepEqual(problems, []);
        for (const r of results) {
          assert.ok(r.sent >= 50, `the ping ran through the changes (${r.sent} sent)`);
          assert.equal(r.sent - r.received, 0, `pings lost: ${r.sent - r.received} of ${r.sent}`);
        }
        assert.deepEqual(new Map(staying.map((n) => [n, kiloAddress(lab, n)])), before);
      },
    );
  });
}
