/**
 * Kilo's manual multi-cluster procedure (Kilo's docs/multi-cluster-services.md, "Getting Started"),
 * run as its text stands, in a shell with kubectl and kilo-ts's kgctl on PATH, against the two
 * clusters of `kg lab up --clusters 2` (docs/multi-cluster.md): every node of cluster 1 becomes a
 * Peer of cluster 2 (`kgctl showconf node N --as-peer`, its service CIDR as an extra allowed IP) and
 * the reverse. Before, no pod of one cluster reaches a pod of the other; after, every one does, both
 * ways, in `location` and `cross` granularity.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { clusterKubeconfig, Lab } from '../../packages/lab/src/lab.js';
import { allPairs, firstReplies, formatMatrix, pingPairs, type Pair } from '../../packages/lab/src/probe.js';
import type { Granularity } from '../../src/model/types.js';
import { ensureBuilt, root } from '../cli/built.js';
import { skipLab } from './lab-helpers.js';

/** The loop of Kilo's docs/multi-cluster-services.md, as written there. */
const kiloProcedure = `
# Register the nodes in cluster1 as peers of cluster2.
for n in $(kubectl --kubeconfig $KUBECONFIG1 get no -o name | cut -d'/' -f2); do
    # Specify the service CIDR as an extra IP range that should be routable.
    kgctl --kubeconfig $KUBECONFIG1 showconf node $n --as-peer -o yaml --allowed-ips $SERVICECIDR1 | kubectl --kubeconfig $KUBECONFIG2 apply -f -
done
# Register the nodes in cluster2 as peers of cluster1.
for n in $(kubectl --kubeconfig $KUBECONFIG2 get no -o name | cut -d'/' -f2); do
    # Specify the service CIDR as an extra IP range that should be routable.
    kgctl --kubeconfig $KUBECONFIG2 showconf node $n --as-peer -o yaml --allowed-ips $SERVICECIDR2 | kubectl --kubeconfig $KUBECONFIG1 apply -f -
done
`;

let counter = 0;

async function upTwoClusters(granularity: Granularity): Promise<{ dir: string; labs: Lab[] }> {
  ensureBuilt();
  const id = `${process.pid % 10000}${counter++}`;
  const dir = join(tmpdir(), `kilo-lab-mc-${id}`);
  rmSync(dir, { recursive: true, force: true });
  const options = {
    locations: 2,
    nodesPerLocation: 2,
    granularity,
    natLocation: null,
    peer: false,
    prefix: `klm${id}-`,
  };
  return { dir, labs: await Lab.upClusters(dir, options, 2) };
}

/** Every pod of `a` to every pod of `b`. */
const across = (a: Lab, b: Lab): Pair[] => allPairs(a.podEndpoints(), b.podEndpoints());

describe('lab: two clusters joined by Kilo’s manual procedure', { skip: skipLab, timeout: 600_000 }, () => {
  for (const granularity of ['location', 'cross'] as const) {
    test(`${granularity}: pods of cluster 1 reach pods of cluster 2 and back`, async (t) => {
      const { dir, labs } = await upTwoClusters(granularity);
      t.after(async () => {
        if (process.env['KILO_LAB_KEEP_LOGS']) spawnSync('cp', ['-r', dir, `${dir}-logs`]);
        await labs[0]!.down();
      });
      const [one, two] = labs as [Lab, Lab];
      for (const lab of labs) await lab.converge(120_000);
      const pairs = [...across(one, two), ...across(two, one)];
      const before = await pingPairs(pairs, { waitSeconds: 1 });
      assert.deepEqual(
        before.filter((e) => e.ok),
        [],
        `unlinked clusters: no pod reaches the other cluster's pods\n${formatMatrix(before)}`,
      );

      const env = {
        ...process.env,
        PATH: `${join(root, 'bin')}:${process.env['PATH'] ?? ''}`,
        KUBECONFIG1: clusterKubeconfig(dir, 1),
        KUBECONFIG2: clusterKubeconfig(dir, 2),
        SERVICECIDR1: one.plan.serviceCidr,
        SERVICECIDR2: two.plan.serviceCidr,
      };
      // As a user pastes it: no `set -e`. In `location` granularity a node that leads no location
      // has no Peer to give (Kilo's kgctl says "is not a leader" and prints nothing), so kubectl
      // says "no objects passed to apply" for it and the loop goes on, in Kilo as here.
      const r = spawnSync('sh', ['-c', kiloProcedure], { env, encoding: 'utf8', timeout: 120_000 });
      const created = [...r.stdout.matchAll(/^peer\.kilo\.squat\.ai\/(\S+) created$/gm)].map((m) => m[1]!);
      for (const lab of labs) {
        // One Peer per WireGuard segment: per node in cross, per location in location granularity.
        const mine = created.filter((name) => lab.nodes.some((n) => n.name === name));
        const want = granularity === 'cross' ? lab.nodes.length : lab.options.locations;
        assert.equal(mine.length, want, `Peers made of cluster ${lab.plan.cluster}'s nodes:\n${r.stdout}\n${r.stderr}`);
        assert.deepEqual(
          [...new Set(lab.nodes.filter((n) => mine.includes(n.name)).map((n) => n.location))],
          Array.from({ length: lab.options.locations }, (_, i) => i + 1),
          'every location has its Peer',
        );
      }
      const noPeer = (r.stderr.match(/no objects passed to apply/g) ?? []).length;
      assert.equal(noPeer, one.nodes.length + two.nodes.length - created.length, r.stderr);

      const first = await firstReplies(pairs, 90_000);
      const never = pairs.filter((_, i) => first[i] === null).map((p) => `${p.s.name}→${p.d.name}`);
      assert.deepEqual(never, [], 'every pod of each cluster reaches every pod of the other');
      const after = await pingPairs(pairs, { waitSeconds: 2 });
      assert.ok(
        after.every((e) => e.ok),
        `linked clusters: every pair still gets through\n${formatMatrix(after)}`,
      );
      // Each cluster's own mesh is untouched by the other's Peers.
      for (const lab of labs) assert.ok((await lab.matrix({ waitSeconds: 2 })).every((e) => e.ok));
    });
  }
});
