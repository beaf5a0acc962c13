/**
 * kgctl plan/showconf/graph against a live cluster (--kubeconfig) instead of a snapshot: the
 * built CLI as a separate process, talking to the test API server in this process.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { TestApiServer } from '../fixtures/apiserver.js';
import { node, peer, wgKey } from '../helpers/cluster.js';
import { leaseName } from '../../src/election/lease-name.js';
import { Annotation } from '../../src/model/annotations.js';
import { formatMeshFlags } from '../../src/model/mesh-flags.js';
import { defaultAnnounced } from '../helpers/mesh-flags.js';
import { ensureBuilt, root, type Run } from './built.js';
import { kubeConfigFor } from '../../packages/lab/src/apiserver-kubeconfig.js';

/** Runs the built kgctl without blocking this process (the API server answers from here). */
function kgctl(...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(root, 'bin', 'kgctl'), ...args], {
      cwd: root,
      env: { ...process.env, KUBECONFIG: '' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

let api: TestApiServer;
let dir = '';
let kubeconfig = '';

before(async () => {
  ensureBuilt();
  api = await TestApiServer.start();
  const now = Math.floor(Date.now() / 1000);
  // The nodes announce full granularity: `auto` must pick it up from them.
  api.addNode(
    node('a', {
      location: 'eu',
      endpoint: '198.51.100.1:51820',
      internalIP: '192.168.0.1/24',
      podCIDR: '10.42.0.0/24',
      granularity: 'full',
      lastSeen: now,
    }),
  );
  api.addNode(
    node('b', {
      location: 'eu',
      endpoint: '198.51.100.2:51820',
      internalIP: '192.168.0.2/24',
      podCIDR: '10.42.1.0/24',
      granularity: 'full',
      lastSeen: now,
    }),
  );
  api.addNode(node('bad', { location: 'eu', endpoint: 'nope', podCIDR: '10.42.2.0/24', lastSeen: now }));
  api.addPeer(peer('laptop', { allowedIPs: ['10.5.0.1/32'] }));
  dir = mkdtempSync(join(tmpdir(), 'kgctl-live-'));
  kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, api.kubeconfigYaml());
});

after(async () => {
  await api.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('kgctl against a live cluster', () => {
  test('plan NODE --kubeconfig: granularity auto follows the nodes, bad objects are warned about', async () => {
    const r = await kgctl('plan', 'a', '--kubeconfig', kubeconfig);
    assert.equal(r.status, 0, r.stderr);
    const plan = JSON.parse(r.stdout) as { peers: { publicKey: string }[] };
    // Full granularity: b, in a's location, is a WireGuard peer of its own (location would merge them).
    assert.deepEqual(plan.peers.map((p) => p.publicKey).sort(), [wgKey('b'), wgKey('laptop')].sort());
    assert.match(r.stderr, /^warning: ignoring Node "bad"/m);
  });

  test('showconf peer and graph read the same cluster; --master overrides the server', async () => {
    const conf = await kgctl('showconf', 'peer', 'laptop', '--kubeconfig', kubeconfig);
    assert.equal(conf.status, 0, conf.stderr);
    assert.equal(conf.stdout.match(/^\[Peer\]$/gm)?.length, 2);
    const graph = await kgctl('graph', '--master', api.url);
    assert.equal(graph.status, 0, graph.stderr);
    assert.match(graph.stdout, /^digraph kilo \{/);
    assert.match(graph.stdout, /full granularity/);
  });

  test('plan and graph --leader-election=lease: the Lease holder leads, and the plan says why', async () => {
    const { CoordinationV1Api, V1MicroTime } = await import('@kubernetes/client-node');
    await kubeConfigFor(api)
      .makeApiClient(CoordinationV1Api)
      .createNamespacedLease({
        namespace: 'kube-system',
        body: {
          metadata: { name: leaseName('eu') },
          spec: { holderIdentity: 'b', leaseDurationSeconds: 3600, renewTime: new V1MicroTime(Date.now()) },
        },
      });
    const args = ['--kubeconfig', kubeconfig, '--mesh-granularity', 'location'];
    // Kilo's rule would choose a (first by name, both public): the Lease says b.
    const byRule = await kgctl('plan', 'a', '-o', 'text', ...args);
    assert.match(byRule.stdout, /leader of segment a, b \(chosen by Kilo's annotation rule\)/);
    const byLease = await kgctl('plan', 'a', '-o', 'text', '--leader-election=lease', ...args);
    assert.equal(byLease.status, 0, byLease.stderr);
    assert.match(
      byLease.stdout,
      /not the leader of segment a, b: traffic to other segments goes through b \(holder of the location Lease\)/,
    );
    const graph = await kgctl('graph', '--leader-election=lease', ...args);
    assert.match(graph.stdout, /leader \(lease\)/);

    // showconf agrees with plan: b runs WireGuard for eu, and a Peer dials b.
    const ruleConf = await kgctl('showconf', 'node', 'b', ...args);
    assert.equal(ruleConf.status, 1);
    assert.match(ruleConf.stderr, /node "b" is not a leader: "a" runs WireGuard for location "eu"/);
    const leaseConf = await kgctl('showconf', 'node', 'b', '--leader-election=lease', ...args);
    assert.equal(leaseConf.status, 0, leaseConf.stderr);
    assert.match(leaseConf.stdout, /^ListenPort = 51820$/m);
    const follower = await kgctl('showconf', 'node', 'a', '--leader-election=lease', ...args);
    assert.match(follower.stderr, /node "a" is not a leader: "b" runs WireGuard for location "eu"/);
    const peerConf = await kgctl('showconf', 'peer', 'laptop', '--leader-election=lease', ...args);
    assert.equal(peerConf.status, 0, peerConf.stderr);
    assert.match(peerConf.stdout, /^Endpoint = 198\.51\.100\.2:51820$/m);
    assert.doesNotMatch(peerConf.stdout, /198\.51\.100\.1:51820/);
  });

  test('agents announcing --leader-election=lease: kgctl reads the Leases without being told', async () => {
    // Runs after the test above created the Lease (b holds eu).
    const announce = formatMeshFlags({ ...defaultAnnounced, leaderElection: 'lease', namespace: 'kube-system' });
    // Fresh last-seen too: the earlier tests' processes may have taken a minute on a busy machine.
    const lastSeen = String(Math.floor(Date.now() / 1000));
    for (const n of ['a', 'b'])
      api.patchNode(n, {
        metadata: { annotations: { [Annotation.meshFlags]: announce, [Annotation.lastSeen]: lastSeen } },
      });
    const r = await kgctl('plan', 'a', '-o', 'text', '--kubeconfig', kubeconfig, '--mesh-granularity', 'location');
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /traffic to other segments goes through b \(holder of the location Lease\)/);
    // Said explicitly, the user's flag wins.
    const byRule = await kgctl(
      'plan',
      'a',
      '-o',
      'text',
      '--kubeconfig',
      kubeconfig,
      '--mesh-granularity',
      'location',
      '--leader-election',
      'annotation',
    );
    assert.match(byRule.stdout, /leader of segment a, b \(chosen by Kilo's annotation rule\)/);
  });

  test('an unreachable API server is one line naming it', async () => {
    const r = await kgctl('graph', '--master', 'http://127.0.0.1:1');
    assert.equal(r.status, 1);
    assert.match(r.stderr, /^kgctl: cannot list Nodes from http:\/\/127\.0\.0\.1:1: .*ECONNREFUSED/);
    assert.equal(r.stderr.trim().split('\n').length, 1);
  });

  test('neither --cluster nor --kubeconfig is a usage error', async () => {
    const r = await kgctl('graph');
    assert.equal(r.status, 1);
    assert.match(r.stderr, /--cluster FILE .* or --kubeconfig FILE/);
  });
});
