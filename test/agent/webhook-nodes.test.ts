/**
 * `kg webhook` with the Nodes' pod CIDRs (--check-pod-cidrs): the real HTTPS server, the real
 * Kubernetes backend (KubernetesNodes: list, watch, reflector) against the test API server. A Peer
 * claiming a node's pod CIDR, IPv4 or IPv6, is refused naming the node; an unrelated one admitted;
 * a node added later is seen; before the first list Peers are admitted and logged; once listed,
 * an API server that goes away leaves the last list in force. And the built command, wired by --master.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { startWebhook } from '../../src/agent/webhook.js';
import { NodePodCIDRs } from '../../src/agent/webhook-nodes.js';
import { KubernetesNodes } from '../../src/backend/kubernetes/nodes.js';
import type { Logger } from '../../src/backend/source.js';
import { kubeConfigFor } from '../../packages/lab/src/apiserver-kubeconfig.js';
import { nodeCommand } from '../../scripts/node-flags.mjs';
import { ensureBuilt, root } from '../cli/built.js';
import { TestApiServer } from '../fixtures/apiserver.js';
import { node, wgKey } from '../helpers/cluster.js';
import { skipUnless } from '../helpers/requirements.js';
import { makeCertificate } from './webhook-tls.js';

// kg as the image runs it: its #! line's environment and node flags (scripts/node-flags.mjs).
const [kgFile, ...kgArgs] = nodeCommand(join(root, 'bin', 'kg'));

const noOpenssl = skipUnless(spawnSync('openssl', ['version']).status === 0, 'needs the openssl command');

interface Response {
  uid: string;
  allowed: boolean;
  status?: { code: number; message: string };
}

/** POSTs a CREATE review of Peer `name` with these allowed IPs; the response part of the answer. */
function review(port: number, ca: Buffer, name: string, allowedIPs: string[]): Promise<Response> {
  const body = JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: `uid-${name}`,
      operation: 'CREATE',
      object: {
        apiVersion: 'kilo.squat.ai/v1alpha1',
        kind: 'Peer',
        metadata: { name },
        spec: { allowedIPs, publicKey: wgKey(name) },
      },
    },
  });
  return new Promise((resolve, reject) => {
    const options = { method: 'POST', ca, headers: { 'content-type': 'application/json' } };
    const req = request(`https://127.0.0.1:${port}/validate`, options, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => {
        if (res.statusCode !== 200) reject(new Error(`${res.statusCode}: ${text}`));
        else resolve((JSON.parse(text) as { response: Response }).response);
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Retries `check` until it holds: a liveness wait on the watch, never a timing assertion. */
async function until(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const fast = {
  listTimeoutMs: 2_000,
  watchSilenceMs: 2_000,
  watchdogIntervalMs: 100,
  healthyWatchMs: 500,
  backoff: { initialMs: 50, maxMs: 200, factor: 2, jitter: 0.5 },
};

function seed(api: TestApiServer): void {
  api.addNode(node('v4', { podCIDR: '10.42.1.0/24' }));
  api.addNode(node('dual', { podCIDR: '10.42.2.0/24', podCIDRs: ['10.42.2.0/24', 'fd42:2::/64'] }));
}

async function setup(t: TestContext, options: { failFirst?: boolean } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'kilo-webhook-nodes-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const { cert, key } = makeCertificate(dir, 'server');
  const api = await TestApiServer.start({ bookmarkIntervalMs: 200 });
  t.after(() => api.close());
  seed(api);
  if (options.failFirst) api.failRequests(503);
  const warnings: string[] = [];
  const log: Logger = {
    debug: () => undefined,
    info: () => undefined,
    warn: (f, m) => warnings.push(JSON.stringify({ ...f, m })),
    error: (f, m) => warnings.push(JSON.stringify({ ...f, m })),
  };
  const reader = new KubernetesNodes({ kubeConfig: kubeConfigFor(api), timings: fast });
  reader.start();
  t.after(() => reader.stop());
  const server = await startWebhook({
    certFile: cert,
    keyFile: key,
    host: '127.0.0.1',
    port: 0,
    log,
    nodes: new NodePodCIDRs(reader),
  });
  t.after(() => server.close());
  const ca = readFileSync(cert);
  return { api, reader, warnings, check: (name: string, ips: string[]) => review(server.address.port, ca, name, ips) };
}

describe("kg webhook: Peers against the Nodes' pod CIDRs, from the API server", { skip: noOpenssl }, () => {
  test('a claim on a pod CIDR (IPv4, IPv6, inside or around it) is refused naming the node; others are allowed; a new node is seen', async (t) => {
    const { api, reader, check } = await setup(t);
    await reader.waitForSync();
    const refusals: [string[], string, string][] = [
      [['10.42.1.0/24'], 'spec.allowedIPs[0]', 'the pod CIDR 10.42.1.0/24 of Node "v4"'],
      [['10.5.0.1/32', 'fd42:2::1/128'], 'spec.allowedIPs[1]', 'the pod CIDR fd42:2::/64 of Node "dual"'],
      [['10.42.0.0/16'], 'spec.allowedIPs[0]', 'overlaps the pod CIDR 10.42.'],
    ];
    for (const [ips, field, what] of refusals) {
      const r = await check('p', ips);
      assert.equal(r.allowed, false, ips.join());
      assert.equal(r.status?.code, 400);
      for (const part of ['Peer "p"', field, what, JSON.stringify(ips.at(-1))])
        assert.ok(r.status.message.includes(part), `${part} in ${r.status.message}`);
    }
    assert.deepEqual(await check('q', ['10.5.0.1/32', 'fd05::1/128']), { uid: 'uid-q', allowed: true });

    // A node added after the start: its pod CIDRs arrive by the watch.
    assert.equal((await check('r', ['fd42:9::/64'])).allowed, true);
    api.addNode(node('late', { podCIDR: '10.42.9.0/24', podCIDRs: ['10.42.9.0/24', 'fd42:9::/64'] }));
    await until('the new node is seen', async () => !(await check('r', ['fd42:9::/64'])).allowed);
    // And a node deleted frees its range.
    api.deleteNode('v4');
    await until('the deleted node is forgotten', async () => (await check('s', ['10.42.1.0/24'])).allowed);
  });

  test('before the first list a Peer is allowed and logged; once listed, the last list holds while the API server is away', async (t) => {
    const { api, reader, warnings, check } = await setup(t, { failFirst: true });
    assert.equal(reader.synced(), false);
    assert.deepEqual(await check('early', ['10.42.1.0/24']), { uid: 'uid-early', allowed: true });
    assert.ok(
      warnings.some((w) => w.includes('"peer":"early"') && w.includes('not listed yet')),
      warnings.join('\n'),
    );
    api.failRequests(null);
    await reader.waitForSync();
    assert.equal((await check('listed', ['10.42.1.0/24'])).allowed, false);
    // The API server goes away: every request fails, the watch is cut.
    api.failRequests(503);
    api.dropWatches();
    assert.equal((await check('away', ['fd42:2::/64'])).allowed, false);
    assert.equal((await check('away', ['fd05::/64'])).allowed, true);
  });
});

describe('kg webhook --check-pod-cidrs (the built command)', { skip: noOpenssl, timeout: 60_000 }, () => {
  test('--master reaches the API server and the check refuses a claim on a pod CIDR', async (t) => {
    ensureBuilt();
    const dir = mkdtempSync(join(tmpdir(), 'kilo-webhook-nodes-cli-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const { cert, key } = makeCertificate(dir, 'cli');
    const api = await TestApiServer.start();
    t.after(() => api.close());
    seed(api);
    const child = spawn(
      kgFile,
      [
        ...kgArgs,
        'webhook',
        `--cert-file=${cert}`,
        `--key-file=${key}`,
        '--listen=127.0.0.1:0',
        '--listen-metrics=127.0.0.1:0',
        `--master=${api.url}`,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    t.after(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    const ca = readFileSync(cert);
    // The port it bound, from its log line.
    let port = 0;
    await until(
      'kg webhook listens',
      () => {
        assert.equal(child.exitCode, null, stderr);
        port = Number(/"address":"127\.0\.0\.1:(\d+)","msg":"starting webhook server"/.exec(stderr)?.[1] ?? 0);
        return Promise.resolve(port !== 0);
      },
      40_000,
    );
    await until(
      'kg webhook answers from the listed Nodes',
      async () => {
        const r = await review(port, ca, 'p', ['fd42:2::/80']).catch(() => null);
        return r !== null && !r.allowed;
      },
      40_000,
    );
    const r = await review(port, ca, 'p', ['fd42:2::/80']);
    assert.match(r.status!.message, /spec\.allowedIPs\[0\]: overlaps the pod CIDR fd42:2::\/64 of Node "dual"/);
    assert.match(stderr, /listed the Nodes/);
  });

  test('outside a cluster without --kubeconfig or --master it says so and how to turn the check off', () => {
    ensureBuilt();
    const env = { ...process.env };
    delete env['KUBERNETES_SERVICE_HOST'];
    const r = spawnSync(kgFile, [...kgArgs, 'webhook', '--cert-file=/x', '--key-file=/y'], { encoding: 'utf8', env });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /not running inside a cluster.*--check-pod-cidrs=false/);
  });
});
