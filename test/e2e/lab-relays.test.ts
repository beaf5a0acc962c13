/**
 * Relays (issue 34): two locations whose WireGuard cannot reach each other (UDP dropped between
 * their public subnets on the internet router), in cross granularity. They publish each other as
 * unreachable, go through the third location's node, and every pod still reaches every pod;
 * unblocked, they go back to the direct path. Times are printed, never asserted beyond the bound.
 * Hub and spoke: a spoke's only WireGuard peer is its hub, and a blocked site still reaches all.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { setLocationsBlocked } from '../../packages/lab/src/block.js';
import { indirectPairs } from '../../packages/lab/src/relay-paths.js';
import { inNodeNs, run } from '../../packages/lab/src/sh.js';
import { Annotation } from '../../src/model/annotations.js';
import { eventually, nodeKey, skipLab, upLab, wgPeers } from './lab-helpers.js';

/** Three locations of one public node each, converged: a pair to block and a third node to relay. */
async function threeSites(t: TestContext, granularity: 'cross' | 'full') {
  const lab = await upLab(t, { locations: 3, nodesPerLocation: 1, natLocation: null, peer: false, granularity });
  await lab.converge(120_000);
  return lab;
}

for (const granularity of ['cross', 'full'] as const)
  test(
    `${granularity}: a blocked pair of locations connects through a relay, and goes back direct when unblocked`,
    { skip: skipLab },
    async (t) => {
      const lab = await threeSites(t, granularity);
      const [a, b, r] = ['loc1-n1', 'loc2-n1', 'loc3-n1'];
      const podCIDR = (n: string) => `${lab.node(n).podGateway.split('.').slice(0, 3).join('.')}.0/24`;
      /** `wg show kilo0 allowed-ips` of a node: public key → its allowed IPs. */
      const allowed = (n: string) =>
        new Map(
          run(inNodeNs(lab.node(n).ns, lab.runDir(n), ['wg', 'show', 'kilo0', 'allowed-ips']))
            .split('\n')
            .filter(Boolean)
            .map((l) => {
              const [key, ...ips] = l.split(/\s+/);
              return [key!, ips] as const;
            }),
        );
      const unreachable = async (): Promise<Record<string, string>> => {
        const out: Record<string, string> = {};
        for (const o of await lab.api.list('nodes'))
          out[String(o.metadata?.name)] = String(o.metadata?.annotations?.[Annotation.unreachable] ?? '');
        return out;
      };
      const [keyA, keyB, keyR] = [await nodeKey(lab, a), await nodeKey(lab, b), await nodeKey(lab, r)];
      // A node may list a peer it probed before that peer's agent was up (a loaded machine starts
      // agents seconds apart); in a healthy lab every such entry goes once the probes answer.
      let listed: Record<string, string> = {};
      await eventually(
        'a healthy lab relays nothing',
        async () => Object.values((listed = await unreachable())).every((v) => v === ''),
        60_000,
      ).catch(() => undefined);
      assert.deepEqual(listed, { [a]: '', [b]: '', [r]: '' }, 'a healthy lab relays nothing');
      assert.deepEqual([...(await indirectPairs(lab))], [], 'every pair carries its pods on its direct entry');

      setLocationsBlocked(lab.options, 1, 2, true);
      t.after(() => setLocationsBlocked(lab.options, 1, 2, false));
      const blocked = Date.now();
      await eventually(
        `${a} sends ${b}'s pods through ${r}`,
        () => {
          const wg = allowed(a);
          return !!wg.get(keyR)?.includes(podCIDR(b)) && !wg.get(keyB)?.includes(podCIDR(b));
        },
        90_000,
      );
      await eventually(
        `${b} sends ${a}'s pods through ${r}`,
        () => !!allowed(b).get(keyR)?.includes(podCIDR(a)),
        30_000,
      );
      // The direct entries keep only the WireGuard IP, so WireGuard keeps trying them.
      assert.deepEqual(allowed(a).get(keyB)?.length, 1);
      const through = await lab.converge(60_000);
      const relayedMs = through.at - blocked;
      const published = await unreachable();
      assert.ok(published[a] === b || published[b] === a, JSON.stringify(published));
      assert.equal(published[r], '');
      assert.match(
        readFileSync(join(lab.nodeDir(a), 'kg.log'), 'utf8'),
        /loc1-n1 and loc2-n1 cannot reach each other directly: through loc3-n1/,
      );
      assert.match(readFileSync(join(lab.nodeDir(r), 'kg.log'), 'utf8'), /relaying between loc1-n1 and loc2-n1/);

      setLocationsBlocked(lab.options, 1, 2, false);
      const unblocked = Date.now();
      await eventually(
        `${a} and ${b} go back to the direct path`,
        () => !!allowed(a).get(keyB)?.includes(podCIDR(b)) && !!allowed(b).get(keyA)?.includes(podCIDR(a)),
        90_000,
      );
      const directMs = Date.now() - unblocked;
      assert.ok(!allowed(a).get(keyR)?.includes(podCIDR(b)));
      assert.deepEqual(await unreachable(), { [a]: '', [b]: '', [r]: '' });
      await lab.converge(60_000);
      assert.match(
        readFileSync(join(lab.nodeDir(a), 'kg.log'), 'utf8'),
        /loc1-n1 and loc2-n1 reach each other directly again/,
      );
      t.diagnostic(`block → pods through the relay: ${relayedMs} ms; unblock → direct again: ${directMs} ms`);
    },
  );

test(
  'hub and spoke: a spoke peers only with its hub, and reaches every pod through it',
  { skip: skipLab },
  async (t) => {
    const lab = await threeSites(t, 'cross');
    const annotate = (node: string, ...kv: string[]) => {
      const r = spawnSync('kubectl', ['--kubeconfig', lab.kubeconfig, 'annotate', 'node', node, ...kv, '--overwrite'], {
        encoding: 'utf8',
      });
      assert.equal(r.status, 0, r.stderr);
    };
    const [spoke, other, hub] = ['loc1-n1', 'loc2-n1', 'loc3-n1'];
    const hubKey = await nodeKey(lab, hub);
    annotate(hub, `${Annotation.relay}=true`);
    annotate(spoke, `${Annotation.spoke}=true`);
    await eventually(`${spoke} peers with ${hub} alone`, () => wgPeers(lab, spoke).join() === hubKey, 60_000);
    await eventually(`${other} has no peer entry for ${spoke}`, () => wgPeers(lab, other).length === 1, 60_000);
    // The spoke's site lets UDP out to its hub only.
    setLocationsBlocked(lab.options, 1, 2, true);
    t.after(() => setLocationsBlocked(lab.options, 1, 2, false));
    await lab.converge(60_000);
    setLocationsBlocked(lab.options, 1, 2, false);
    annotate(spoke, `${Annotation.spoke}-`);
    await eventually(`${spoke} peers with every node again`, () => wgPeers(lab, spoke).length === 2, 60_000);
    await lab.converge(60_000);
  },
);
