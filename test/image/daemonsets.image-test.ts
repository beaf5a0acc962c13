/**
 * `npm run test:image`: each kg DaemonSet of manifests/, run from the built image the way a kubelet
 * runs it (./kubelet.ts) on lab nodes, against the lab's API server; the nodes must join the mesh
 * with the lab's other nodes (every pod pings every pod), answer /health, install the CNI
 * configuration and plugins where the manifest says, and stop cleanly on SIGTERM as PID 1.
 *
 * What the lab cannot have, and the closest variant run instead:
 * - kernel WireGuard: kilo-kernel.yaml runs as written; kg's --wireguard=auto falls back to
 *   wireguard-go through the host's /dev/net/tun (a privileged container has every host device);
 * - IPIP (no ipip module): one node per location, so nothing is encapsulated (Kilo's default
 *   --encapsulate=always applies only between location mates);
 * - flannel: a stand-in flannel.1 on every node of the k3s lab: the VXLAN device with the VTEP
 *   address, ARP and FDB entries and routes flannel's vxlan backend leaves; no flanneld.
 *
 * kilo-kernel.yaml runs a second time with its commented-out `--firewall=nftables` taken: kg's
 * table inet kilo on the nodes, written and read by the image's nft.
 *
 * Needs the image (built by `npm run image`, which `npm run test:image` runs first), buildah, and
 * what the lab needs. Set KILO_IMAGE to test another tag.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { apiAddress, apiPort, type LabOptions } from '../../packages/lab/src/layout.js';
import type { Lab } from '../../packages/lab/src/lab.js';
import { kiloIptables, kiloNftables } from '../../packages/lab/src/observe.js';
import { killNamespaceProcesses } from '../../packages/lab/src/processes.js';
import { ipBatch, run } from '../../packages/lab/src/sh.js';
import { processStart } from '../../packages/lab/src/state.js';
import { upLab } from '../e2e/lab-helpers.js';
import { Container, imageConfig, serviceAccountDir, type PodContext } from './kubelet.js';

/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-return -- manifests are untyped YAML */
type Spec = any;

const root = join(import.meta.dirname, '..', '..');
const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
const image = process.env['KILO_IMAGE'] ?? `ghcr.io/kilo-ts/kilo-ts:${version}`;

function manifest(file: string): Spec[] {
  return parseAllDocuments(readFileSync(join(root, 'manifests', file), 'utf8'))
    .map((d) => d.toJS())
    .filter((d) => d !== null);
}

/** kubeadm's kube-proxy kubeconfig, which the kernel and userspace manifests mount: the pod's own token. */
function kubeProxyKubeconfig(): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    `clusters: [{name: default, cluster: {server: "http://${apiAddress}:${apiPort}"}}]`,
    `users: [{name: default, user: {tokenFile: ${serviceAccountDir}/token}}]`,
    'contexts: [{name: default, context: {cluster: default, namespace: default, user: default}}]',
    'current-context: default',
    '',
  ].join('\n');
}

/** What k3s leaves at /etc/rancher/k3s/k3s.yaml (an admin's kubeconfig; the lab needs no client certificate). */
function k3sKubeconfig(): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    `clusters: [{name: default, cluster: {server: "http://${apiAddress}:${apiPort}"}}]`,
    'users: [{name: default, user: {}}]',
    'contexts: [{name: default, context: {cluster: default, user: default}}]',
    'current-context: default',
    '',
  ].join('\n');
}

const vtepMac = (k: number) => `02:42:0a:2a:${k.toString(16).padStart(2, '0')}:00`;

/**
 * flannel's vxlan backend on every lab node: flannel.1 (VNI 1, port 8472, over the LAN) with the
 * node's VTEP address (its pod CIDR's network address), and for each location mate the ARP and FDB
 * entries and the route to its pod CIDR through its VTEP.
 */
function flannelStandIn(lab: Lab): void {
  for (const n of lab.nodes) {
    const mates = lab.nodes.filter((m) => m.location === n.location && m.name !== n.name);
    const vtep = (k: number) => `10.42.${k}.0`;
    ipBatch(n.ns, [
      `link add flannel.1 type vxlan id 1 local ${n.lanIP} dev lan0 dstport 8472 nolearning`,
      `link set flannel.1 address ${vtepMac(n.k)} mtu 1450 up`,
      `addr add ${vtep(n.k)}/32 dev flannel.1`,
      ...mates.flatMap((m) => [
        `neigh replace ${vtep(m.k)} lladdr ${vtepMac(m.k)} dev flannel.1 nud permanent`,
        `route replace ${m.podCIDR} via ${vtep(m.k)} dev flannel.1 onlink`,
      ]),
    ]);
    for (const m of mates)
      run(['ip', 'netns', 'exec', n.ns, 'bridge', 'fdb', 'append', vtepMac(m.k), 'dev', 'flannel.1', 'dst', m.lanIP]);
  }
}

interface Pod {
  node: string;
  hostRoot: string;
  init: Container[];
  containers: Container[];
}

/** Starts the DaemonSet's pod on a lab node in place of the lab's own agent. */
async function runPod(lab: Lab, file: string, node: string, t: TestContext, kgArgs: string[] = []): Promise<Pod> {
  const docs = manifest(file);
  const ds = docs.find((d) => d.kind === 'DaemonSet');
  const spec = ds.spec.template.spec;
  // An option the manifest offers commented out, taken as an admin would uncomment it.
  const kilo = spec.containers.find((c: Spec) => c.name === 'kilo');
  kilo.args = [...kilo.args, ...kgArgs];
  const namespace: string = ds.metadata.namespace;
  const configMaps = new Map<string, Record<string, string>>(
    docs
      .filter((d) => d.kind === 'ConfigMap' && d.metadata.namespace === namespace)
      .map((d) => [d.metadata.name, d.data]),
  );
  configMaps.set('kube-proxy', { 'kubeconfig.conf': kubeProxyKubeconfig() });
  const n = lab.node(node);
  const hostRoot = join(lab.state.dir, 'hosts', node);
  mkdirSync(join(hostRoot, 'etc', 'rancher', 'k3s'), { recursive: true });
  writeFileSync(join(hostRoot, 'etc', 'rancher', 'k3s', 'k3s.yaml'), k3sKubeconfig(), { mode: 0o600 });
  const podName = `kts${process.pid % 100000}-${ds.metadata.name}-${node}`;
  const ctx: PodContext = {
    image,
    podName,
    namespace,
    nodeName: node,
    nodeIP: n.lanIP,
    netns: n.ns,
    hostRoot,
    podDir: join(lab.state.dir, 'pods', podName),
    configMaps,
    serviceAccountToken: `token-of-${namespace}-${spec.serviceAccountName}`,
    apiHost: apiAddress,
    apiPort,
  };
  mkdirSync(ctx.podDir, { recursive: true });
  const img = imageConfig(image);
  await lab.stopAgent(node);
  // The lab's kg leaves wireguard-go running (so that a restarted agent adopts it); a pod's would die
  // with its container. Gone with it, kilo0 is not left to the pod.
  await killNamespaceProcesses(n.ns);
  const pod: Pod = { node, hostRoot, init: [], containers: [] };
  t.after(async () => {
    for (const c of [...pod.containers, ...pod.init]) {
      await c.stop(2000);
      c.remove();
    }
  });
  for (const c of spec.initContainers ?? []) {
    const container = new Container(c, spec, ctx, img);
    pod.init.push(container);
    await container.run();
  }
  for (const c of spec.containers) {
    const container = new Container(c, spec, ctx, img);
    pod.containers.push(container);
    const pid = container.start();
    // Recorded in the lab, so `kg lab down` stops it even if this test dies.
    lab.state.record({ kind: 'process', pid, start: processStart(pid) ?? '', what: `pod ${podName}/${c.name}` });
  }
  return pod;
}

async function eventually(what: string, f: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!f()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** /health as the kubelet's readiness probe asks it: HTTP GET on the probe's port, inside the node. */
async function waitReady(lab: Lab, pod: Pod): Promise<void> {
  const kg = pod.containers.find((c) => c.spec.name === 'kilo')!;
  const probe = kg.spec.readinessProbe.httpGet;
  assert.equal(probe.port, 1107, 'Lab.agentGet asks port 1107');
  await eventually(
    `${pod.node} is ready (${probe.path}); its log: ${kg.tail()}`,
    () => {
      assert.equal(kg.exit, null, `kg exited (${kg.exit}): ${kg.tail(10)}`);
      return lab.agentGet(pod.node, probe.path).ok;
    },
    90_000,
  );
}

function wgImplementation(lab: Lab, node: string): string {
  const link = run(['ip', '-n', lab.node(node).ns, '-d', 'link', 'show', 'kilo0']);
  return /\bwireguard\b/.test(link) ? 'kernel' : /\btun\b/.test(link) ? 'wireguard-go' : link;
}

/** The conflist and plugins the init container put on the host, and kg's pod CIDR in it. */
function checkCni(lab: Lab, pod: Pod, file: string): void {
  const dir = join(pod.hostRoot, 'etc', 'cni', 'net.d');
  assert.deepEqual(readdirSync(dir), ['10-kilo.conflist'], `${file}: the only CNI configuration`);
  const conf = JSON.parse(readFileSync(join(dir, '10-kilo.conflist'), 'utf8'));
  assert.deepEqual(
    conf.plugins.map((p: Spec) => p.type),
    ['bridge', 'portmap'],
  );
  const ranges = JSON.stringify(conf.plugins[0].ipam);
  assert.ok(ranges.includes(lab.node(pod.node).podCIDR), `kg filled in the pod CIDR: ${ranges}`);
  for (const plugin of ['bridge', 'host-local', 'portmap', 'loopback']) {
    const bin = join(pod.hostRoot, 'opt', 'cni', 'bin', plugin);
    accessSync(bin, constants.X_OK);
    // The plugin runs on the host (the container runtime calls it): it answers the CNI VERSION command.
    const r = spawnSync(bin, [], { env: { CNI_COMMAND: 'VERSION' }, encoding: 'utf8', timeout: 10_000 });
    assert.equal(r.status, 0, `${plugin}: ${r.stderr}`);
    assert.ok((JSON.parse(r.stdout) as { supportedVersions: string[] }).supportedVersions.includes(conf.cniVersion));
  }
}

/**
 * `kg --version` from the image: the package version and the commit it was built from (its revision
 * label); and `kg lab`, which the image does not carry, says so.
 */
function checkVersion(pod: Pod): void {
  const kg = pod.containers[0]!;
  const r = spawnSync('chroot', [kg.root, '/app/bin/kg', '--version'], {
    encoding: 'utf8',
    env: Object.fromEntries(kg.env),
    timeout: 30_000,
  });
  assert.equal(r.status, 0, r.stderr);
  // npm run image builds from a git checkout: the commit is known.
  const commit = kg.img.labels['org.opencontainers.image.revision'] ?? '';
  assert.match(commit, /^[0-9a-f]{40}$/);
  assert.equal(r.stdout, `kg ${version} (commit ${commit})\n`);
  // The lab and its test API server are the repository's demo, not the agent's.
  assert.ok(!existsSync(join(kg.root, 'app', 'packages')), 'the image has no packages/ (the lab)');
  for (const p of ['@kilo-ts/lab', 'fast-json-patch'])
    assert.ok(!existsSync(join(kg.root, 'app', 'node_modules', p)), `the image has no node_modules/${p}`);
  const lab = spawnSync('chroot', [kg.root, '/app/bin/kg', 'lab', 'up'], {
    encoding: 'utf8',
    env: Object.fromEntries(kg.env),
    timeout: 30_000,
  });
  assert.equal(lab.status, 1);
  assert.match(lab.stderr, /^kg: the lab is not part of this installation/);
}

/**
 * `nft` from the image runs, and reads the node's netfilter: the version, and the tables of the
 * pod's network namespace, where with --firewall=nftables kg's table inet kilo is.
 */
function checkNft(lab: Lab, pod: Pod, firewall: 'nftables' | 'auto'): void {
  const kg = pod.containers[0]!;
  const env = Object.fromEntries(kg.env);
  const version = spawnSync('chroot', [kg.root, 'nft', '--version'], { encoding: 'utf8', env, timeout: 30_000 });
  assert.equal(version.status, 0, `nft --version in the image: ${version.stderr}`);
  assert.match(version.stdout, /^nftables v\d+\.\d+/);
  const ns = lab.node(pod.node).ns;
  const tables = spawnSync('ip', ['netns', 'exec', ns, 'chroot', kg.root, 'nft', 'list', 'tables'], {
    encoding: 'utf8',
    env,
    timeout: 30_000,
  });
  assert.equal(tables.status, 0, `nft list tables in the image, on ${pod.node}: ${tables.stderr}`);
  const ipt = kiloIptables(ns);
  if (firewall === 'nftables') {
    assert.match(tables.stdout, /^table inet kilo$/m, `${pod.node}: kg's table, seen by the image's nft`);
    assert.ok(
      kiloNftables(ns).some((l) => l.includes('masquerade')),
      `${pod.node}: the table masquerades`,
    );
    assert.deepEqual(ipt, [], `${pod.node}: nothing of Kilo's in iptables`);
  } else {
    // auto keeps iptables where it is installed, as on the lab's nodes.
    assert.doesNotMatch(tables.stdout, /^table inet kilo$/m, `${pod.node}: auto took iptables`);
    assert.ok(
      ipt.some((l) => l.startsWith(':KILO-NAT')),
      `${pod.node}: Kilo's iptables chains:\n${ipt.join('\n')}`,
    );
  }
}

interface Case {
  file: string;
  /** Arguments added to kg's, as an admin uncommenting an option of the manifest would. */
  kgArgs: string[];
  lab: Partial<LabOptions>;
  /** The nodes that run the DaemonSet's pod; the others keep the lab's own kg. */
  podNodes: string[];
  /** The lab's own agents' flags, to match the DaemonSet's. */
  labAgentFlags: string[];
  flannel: boolean;
  cni: boolean;
  wireguard: 'wireguard-go';
}

/**
 * kilo-kernel.yaml and kilo-userspace.yaml: kg is the CNI; one node per location (three, one behind
 * NAT), two of them running the pod. Without kernel WireGuard here, both end up on wireguard-go.
 */
const cniCase = (file: string, kgArgs: string[] = []): Case => ({
  file,
  kgArgs,
  lab: { locations: 3, nodesPerLocation: 1, natLocation: 3, peer: false, granularity: 'location' },
  podNodes: ['loc1-n1', 'loc2-n1'],
  labAgentFlags: [],
  flannel: false,
  cni: true,
  wireguard: 'wireguard-go',
});

const cases: Case[] = [
  cniCase('kilo-kernel.yaml'),
  cniCase('kilo-userspace.yaml'),
  cniCase('kilo-kernel.yaml', ['--firewall=nftables']),
  {
    file: 'kilo-k3s-flannel.yaml',
    kgArgs: [],
    lab: { locations: 2, nodesPerLocation: 2, natLocation: null, peer: false, granularity: 'cross' },
    podNodes: ['loc1-n1', 'loc1-n2'],
    labAgentFlags: ['--compatibility=flannel', '--local=false', '--cni=false'],
    flannel: true,
    cni: false,
    wireguard: 'wireguard-go',
  },
];

describe(`the DaemonSets, run from ${image}`, () => {
  for (const c of cases) {
    const args = c.kgArgs.length > 0 ? ` with ${c.kgArgs.join(' ')}` : '';
    test(`${c.file}${args}: ${c.podNodes.join(', ')} run its pod and join the mesh`, async (t) => {
      const t0 = Date.now();
      const lab = await upLab(t, c.lab);
      if (c.flannel) flannelStandIn(lab);
      if (c.labAgentFlags.length > 0) {
        // The lab's own agents run as the DaemonSet would configure them.
        await lab.restartAgents(lab.options.granularity, c.labAgentFlags);
      }
      const pods: Pod[] = [];
      for (const node of c.podNodes) pods.push(await runPod(lab, c.file, node, t, c.kgArgs));
      for (const pod of pods) await waitReady(lab, pod);
      const { matrix, ms } = await lab.converge(120_000);
      t.diagnostic(`${matrix.length} pod pairs ping, ${ms} ms after the pods were ready; ${Date.now() - t0} ms in all`);
      for (const pod of pods) {
        assert.equal(wgImplementation(lab, pod.node), c.wireguard, pod.node);
        if (c.cni) checkCni(lab, pod, c.file);
        else assert.ok(!existsSync(join(pod.hostRoot, 'etc', 'cni', 'net.d')), 'flannel keeps its CNI configuration');
        assert.equal(lab.agentGet(pod.node, '/health').ok, true);
        // prom-client: one of the few packages the image keeps in node_modules (./contents.image-test.ts).
        assert.match(lab.agentGet(pod.node, '/metrics').body, /^kilo_\w+ /m, `${pod.node}: /metrics`);
        checkNft(lab, pod, c.kgArgs.includes('--firewall=nftables') ? 'nftables' : 'auto');
      }
      if (c.flannel) {
        // Location mates through flannel's VXLAN device, the other location through kilo0.
        const [a, b] = c.podNodes.map((n) => lab.node(n));
        const other = lab.nodes.find((n) => n.location !== a!.location)!;
        assert.match(lab.routeGet(a!.name, b!.podIP), /dev flannel\.1/);
        assert.match(lab.routeGet(a!.name, other.podIP), /dev kilo0/);
      }
      checkVersion(pods[0]!);
      // A kubelet stops a pod with SIGTERM to the container's PID 1: kg must end, cleanly.
      for (const pod of pods) {
        const kg = pod.containers[0]!;
        await kg.stop(15_000);
        assert.equal(kg.exit, 0, `${pod.node}: kg as PID 1 ended with ${kg.exit}: ${kg.tail()}`);
      }
    });
  }
});
