/**
 * `kg multicluster` (docs/multi-cluster.md) keeping the two clusters of `kg lab up --clusters 2`
 * linked, with nobody running anything else: started once, it makes every pod of each cluster
 * reach every pod of the other; a node added to cluster 2 is reached from every pod of cluster 1
 * within 15 s of its Node object (the issue's bound, the time printed); a node removed from
 * cluster 2 disappears from cluster 1's Peers; a Service labelled for export in cluster 1 appears
 * in cluster 2 as a selector-less Service with an EndpointSlice at its clusterIP; on SIGTERM with
 * --unlink-on-exit the Peers it made are gone and the clusters are apart again.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { firstReplies, pingPairs } from '../../packages/lab/src/probe.js';
import { root } from '../cli/built.js';
import { eventually, skipLab } from './lab-helpers.js';
import { across, docEnv, upTwoClusters } from './lab-multicluster-helpers.js';

/** The issue's bound: a joining node reachable from the other cluster's pods this soon. */
const joinBoundMs = 15_000;

describe('lab: two clusters kept linked by kg multicluster', { skip: skipLab, timeout: 900_000 }, () => {
  test('cross: nodes joining and leaving are followed, a labelled Service exported, unlinked on exit', async (t) => {
    const { dir, labs } = await upTwoClusters('cross');
    const running: { controller?: ChildProcess } = {};
    const logFile = join(dir, 'multicluster.log');
    t.after(async () => {
      const c = running.controller;
      if (c?.pid !== undefined && c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
      if (process.env['KILO_LAB_KEEP_LOGS']) spawnSync('cp', ['-r', dir, `${dir}-logs`]);
      await labs[0].down();
    });
    const [one, two] = labs;
    for (const lab of labs) await lab.converge(120_000);
    const env = docEnv(dir, one, two);
    const peersOf = async () => (await one.api.list('peers')).map((p) => p.metadata?.name ?? '').sort();

    const log = openSync(logFile, 'a');
    const controller = spawn(
      join(root, 'bin', 'kg'),
      [
        'multicluster',
        '--kubeconfig',
        env['KUBECONFIG1']!,
        '--remote-kubeconfig',
        env['KUBECONFIG2']!,
        '--name',
        'one',
        '--remote-name',
        'two',
        '--service-cidr',
        one.plan.serviceCidr,
        '--remote-service-cidr',
        two.plan.serviceCidr,
        '--unlink-on-exit',
      ],
      { env, stdio: ['ignore', log, log] },
    );
    running.controller = controller;
    closeSync(log);
    const exited = new Promise<number | null>((resolve) => controller.once('exit', (code) => resolve(code)));

    const pairs = [...across(one, two), ...across(two, one)];
    const first = await firstReplies(pairs, 120_000);
    assert.deepEqual(
      pairs.filter((_, i) => first[i] === null).map((p) => `${p.s.name}→${p.d.name}`),
      [],
      `linked by the controller: every pod reaches every pod of the other cluster\n${readFileSync(logFile, 'utf8')}`,
    );

    // A node joins cluster 2: nobody runs anything.
    const { node, createdAt } = await two.addNode(1);
    const fresh = two.podEndpoints().filter((e) => e.name === node.name);
    const toFresh = [...one.podEndpoints().flatMap((s) => fresh.map((d) => ({ s, d })))];
    const reached = await firstReplies(toFresh, 60_000);
    const after = reached.map((at) => (at === null ? null : at - createdAt));
    console.log(
      `node ${node.name} joined cluster 2: cluster 1's pods reached its pod ${after.map((ms) => (ms === null ? 'never' : `${(ms / 1000).toFixed(1)} s`)).join(', ')} after its Node object`,
    );
    assert.ok(
      after.every((ms) => ms !== null && ms <= joinBoundMs),
      `every pod of cluster 1 reaches the new node's pod within ${joinBoundMs / 1000} s: ${JSON.stringify(after)}`,
    );
    assert.ok((await peersOf()).includes(node.name));

    // It leaves: its Peer goes from cluster 1.
    await two.removeNode(node.name);
    await eventually(`Peer ${node.name} gone from cluster 1`, async () => !(await peersOf()).includes(node.name));

    // A Service of cluster 1 labelled for export: mirrored into cluster 2.
    const kubectl = (kubeconfig: string, args: string[], input?: string) => {
      const r = spawnSync('kubectl', ['--kubeconfig', kubeconfig, ...args], { env, input, encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      return r.stdout;
    };
    kubectl(
      env['KUBECONFIG1']!,
      ['apply', '-f', '-'],
      'apiVersion: v1\nkind: Service\nmetadata: {name: gpu, labels: {kilo.squat.ai/multicluster-export: "true"}}\nspec:\n  selector: {app: gpu}\n  ports: [{name: http, port: 80}]\n',
    );
    const clusterIP = kubectl(env['KUBECONFIG1']!, ['get', 'service', 'gpu', '-o', 'jsonpath={.spec.clusterIP}']);
    const sliceAddress = () =>
      spawnSync(
        'kubectl',
        [
          '--kubeconfig',
          env['KUBECONFIG2']!,
          'get',
          'endpointslices',
          '-l',
          'kubernetes.io/service-name=gpu',
          '-o',
          'jsonpath={.items[*].endpoints[*].addresses[*]}',
        ],
        { env, encoding: 'utf8' },
      ).stdout;
    await eventually('the EndpointSlice of gpu in cluster 2', () => sliceAddress() === clusterIP, 60_000);
    assert.equal(kubectl(env['KUBECONFIG2']!, ['get', 'service', 'gpu', '-o', 'jsonpath={.spec.selector}']), '');

    // SIGTERM with --unlink-on-exit: what it made is gone, the clusters are apart.
    controller.kill('SIGTERM');
    assert.equal(await exited, 0, readFileSync(logFile, 'utf8'));
    assert.deepEqual(await peersOf(), []);
    assert.deepEqual(
      (await two.api.list('peers')).map((p) => p.metadata?.name),
      [],
    );
    assert.equal(sliceAddress(), '');
    await eventually('no pod reaches the other cluster', async () =>
      (await pingPairs(pairs, { waitSeconds: 1 })).every((e) => !e.ok),
    );
  });
});
