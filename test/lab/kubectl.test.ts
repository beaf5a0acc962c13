/**
 * An operator's first move, with a real kubectl against the lab's API server: discovery, get,
 * describe, annotate, label, `apply -f manifests/crds.yaml`, and applying a Peer (create, then
 * the patch kubectl computes for a change). Skipped, loudly, where no kubectl is installed.
 */
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { TestApiServer } from '../../packages/lab/src/apiserver.js';
import { wgKey } from '../helpers/cluster.js';
import { skipUnless } from '../helpers/requirements.js';

const run = promisify(execFile);
const hasKubectl = spawnSync('kubectl', ['version', '--client'], { stdio: 'ignore' }).status === 0;
if (!hasKubectl)
  console.error('SKIPPED: kubectl is not installed (Debian: kubernetes-client); the kubectl test does not run');

const manifests = join(import.meta.dirname, '../../manifests');

test(
  'kubectl works against the lab API server',
  { skip: skipUnless(hasKubectl, 'needs kubectl (Debian: kubernetes-client)') },
  async (t) => {
    const api = await TestApiServer.start();
    const dir = mkdtempSync(join(tmpdir(), 'kilo-kubectl-'));
    t.after(async () => {
      await api.close();
      rmSync(dir, { recursive: true, force: true });
    });
    writeFileSync(join(dir, 'kubeconfig'), api.kubeconfigYaml());
    const kubectl = async (...args: string[]) =>
      (
        await run('kubectl', args, {
          env: { ...process.env, KUBECONFIG: join(dir, 'kubeconfig'), HOME: dir },
          timeout: 60_000,
        })
      ).stdout;
    api.addNode({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: 'a',
        labels: { 'topology.kubernetes.io/region': 'eu', 'node-role.kubernetes.io/control-plane': '' },
      },
      spec: { podCIDR: '10.42.1.0/24' },
      status: { conditions: [{ type: 'Ready', status: 'True' }], nodeInfo: { kubeletVersion: 'v1.31.2' } },
    } as never);

    // Server-side printing: the columns kube-apiserver's node printer gives kubectl.
    const nodes = await kubectl('get', 'nodes');
    assert.match(nodes, /^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION\n/);
    assert.match(nodes, /^a\s+Ready\s+control-plane\s+\d+s\s+v1\.31\.2$/m);
    await kubectl('cordon', 'a');
    assert.match(await kubectl('get', 'node', 'a'), /^a\s+Ready,SchedulingDisabled\s/m);
    assert.match(await kubectl('describe', 'node', 'a'), /PodCIDR:\s+10\.42\.1\.0\/24/);
    await kubectl('annotate', 'node', 'a', 'kilo.squat.ai/location=eu');
    await kubectl('label', 'node', 'a', 'kilo.squat.ai/leader=true');
    assert.equal(api.node('a')?.metadata?.annotations?.['kilo.squat.ai/location'], 'eu');
    assert.equal(api.node('a')?.metadata?.labels?.['kilo.squat.ai/leader'], 'true');
    await kubectl('annotate', 'node', 'a', 'kilo.squat.ai/location-');
    assert.equal(api.node('a')?.metadata?.annotations?.['kilo.squat.ai/location'], undefined);

    assert.match(
      await kubectl('apply', '-f', join(manifests, 'crds.yaml')),
      /peers\.kilo\.squat\.ai (configured|unchanged)/,
    );
    assert.match(await kubectl('get', 'crds'), /peers\.kilo\.squat\.ai/);

    const peer = (keepalive: number) =>
      [
        'apiVersion: kilo.squat.ai/v1alpha1',
        'kind: Peer',
        'metadata: {name: laptop}',
        'spec:',
        '  allowedIPs: [10.5.0.1/32]',
        `  publicKey: ${wgKey('laptop')}`,
        `  persistentKeepalive: ${keepalive}`,
        '',
      ].join('\n');
    writeFileSync(join(dir, 'peer.yaml'), peer(10));
    assert.match(await kubectl('apply', '-f', join(dir, 'peer.yaml')), /laptop created/);
    writeFileSync(join(dir, 'peer.yaml'), peer(20));
    assert.match(await kubectl('apply', '-f', join(dir, 'peer.yaml')), /laptop configured/);
    assert.equal((api.peer('laptop')?.spec as { persistentKeepalive?: number }).persistentKeepalive, 20);
    // The Peer CRD's printer columns (manifests/crds.yaml).
    assert.match(
      await kubectl('get', 'peers'),
      /^NAME\s+ALLOWED IPS\s+KEEPALIVE\nlaptop\s+\["10\.5\.0\.1\/32"\]\s+20$/m,
    );
    await kubectl('delete', 'peer', 'laptop');
    assert.deepEqual(api.peerNames(), []);
  },
);
