/**
 * Kilo's manual multi-cluster procedure (Kilo's docs/multi-cluster-services.md, "Getting Started"),
 * run as its text stands, in a shell with kubectl and kilo-ts's kgctl on PATH, against the two
 * clusters of `kg lab up --clusters 2` (docs/multi-cluster.md): every node of cluster 1 becomes a
 * Peer of cluster 2 (`kgctl showconf node N --as-peer`, its service CIDR as an extra allowed IP) and
 * the reverse. Before, no pod of one cluster reaches a pod of the other; after, every one does, both
 * ways, in `location` and `cross` granularity. Then its "Mirroring Services" step as written: a
 * selector-less Service and Endpoints in cluster 2 at the clusterIP of cluster 1's Service (the lab
 * runs no kube-proxy, so the objects are checked, not traffic to the clusterIP).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { firstReplies, formatMatrix, pingPairs } from '../../packages/lab/src/probe.js';
import { Cidr, IP } from '../../src/net/cidr.js';
import { skipLab } from './lab-helpers.js';
import { across, docEnv, upTwoClusters } from './lab-multicluster-helpers.js';

/**
 * Kilo's "Mirroring Services", as written there, after a Service `important-service` exists in
 * cluster 1: a selector-less Service in cluster 2 and Endpoints at cluster 1's clusterIP.
 */
const kiloMirroring = `
cat <<EOF | kubectl --kubeconfig $KUBECONFIG2 apply -f -
apiVersion: v1
kind: Service
metadata:
  name: important-service
spec:
  ports:
    - port: 80
---
apiVersion: v1
kind: Endpoints
metadata:
    name: important-service
subsets:
  - addresses:
      - ip: $(kubectl --kubeconfig $KUBECONFIG1 get service important-service -o jsonpath='{.spec.clusterIP}') # The cluster IP of the important service on cluster1.
    ports:
      - port: 80
EOF
`;

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

describe('lab: two clusters joined by Kilo’s manual procedure', { skip: skipLab, timeout: 600_000 }, () => {
  for (const granularity of ['location', 'cross'] as const) {
    test(`${granularity}: pods of cluster 1 reach pods of cluster 2 and back`, async (t) => {
      const { dir, labs } = await upTwoClusters(granularity);
      t.after(async () => {
        if (process.env['KILO_LAB_KEEP_LOGS']) spawnSync('cp', ['-r', dir, `${dir}-logs`]);
        await labs[0].down();
      });
      const [one, two] = labs;
      for (const lab of labs) await lab.converge(120_000);
      const pairs = [...across(one, two), ...across(two, one)];
      const before = await pingPairs(pairs, { waitSeconds: 1 });
      assert.deepEqual(
        before.filter((e) => e.ok),
        [],
        `unlinked clusters: no pod reaches the other cluster's pods\n${formatMatrix(before)}`,
      );

      const env = docEnv(dir, one, two);
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

      // Kilo's "Mirroring Services": the Service of cluster 1 mirrored into cluster 2 by hand.
      const important =
        'apiVersion: v1\nkind: Service\nmetadata: {name: important-service}\nspec:\n  selector: {app: important}\n  ports: [{port: 80}]\n';
      const made = spawnSync('kubectl', ['--kubeconfig', env['KUBECONFIG1']!, 'apply', '-f', '-'], {
        env,
        input: important,
        encoding: 'utf8',
      });
      assert.equal(made.status, 0, made.stderr);
      const mirrored = spawnSync('sh', ['-c', kiloMirroring], { env, encoding: 'utf8', timeout: 60_000 });
      assert.equal(mirrored.status, 0, mirrored.stderr);
      assert.match(mirrored.stdout, /service\/important-service created\nendpoints\/important-service created/);
      const get = (kubeconfig: string, what: string, path: string) =>
        spawnSync('kubectl', ['--kubeconfig', kubeconfig, 'get', what, 'important-service', '-o', `jsonpath=${path}`], {
          env,
          encoding: 'utf8',
        }).stdout;
      const clusterIP = get(env['KUBECONFIG1']!, 'service', '{.spec.clusterIP}');
      assert.ok(
        Cidr.parse(one.plan.serviceCidr).contains(IP.parse(clusterIP)),
        `${clusterIP} in cluster 1's service range`,
      );
      assert.equal(get(env['KUBECONFIG2']!, 'endpoints', '{.subsets[0].addresses[0].ip}'), clusterIP);
      const mirror = get(env['KUBECONFIG2']!, 'service', '{.spec.clusterIP}');
      assert.ok(
        Cidr.parse(two.plan.serviceCidr).contains(IP.parse(mirror)),
        `the mirror's ${mirror} is cluster 2's own`,
      );
    });
  }
});
