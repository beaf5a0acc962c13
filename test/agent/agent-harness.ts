/**
 * An Agent wired to fake dataplane pieces (WireGuard device, kernel routes/links, netfilter) and to
 * the real KubernetesSource talking to the test API server. Tests drive the cluster through the
 * API server and read what reached the fake kernel.
 */
import type { TestContext } from 'node:test';
import { KubernetesSource } from '../../src/backend/kubernetes/source.js';
import type { ReflectorTimings } from '../../src/backend/kubernetes/reflector.js';
import type { ClusterSource, Logger } from '../../src/backend/source.js';
import { Agent, type AgentDeps, type AgentOptions } from '../../src/agent/agent.js';
import { AgentMetrics } from '../../src/agent/metrics.js';
import { FakeHost } from '../../src/dataplane/host/fake.js';
import { createFakeFirewall, type FakeNetfilter } from '../../src/dataplane/iptables/fake.js';
import { FakeLinks, FakeKernel, fakeRoutingTables } from '../../src/dataplane/routes/fake.js';
import { FakeWireGuardDevice } from '../../src/dataplane/wireguard/fake.js';
import { defaultMeshOptions, type MeshOptions } from '../../src/mesh/options.js';
import { Annotation } from '../../src/model/annotations.js';
import { Cidr, IP } from '../../src/net/cidr.js';
import { generatePrivateKey, publicKeyOf } from '../../src/wireguard/keys.js';
import { TestApiServer, waitUntil } from '../fixtures/apiserver.js';
import { NOW, node, peer } from '../helpers/cluster.js';
import { kubeConfigFor } from '../../packages/lab/src/apiserver-kubeconfig.js';

export { waitUntil };

export interface LogEntry {
  level: 'debug' | 'info' | 'warn' | 'error';
  obj: Record<string, unknown>;
  msg: string;
}

/** A logger that keeps every entry, for assertions on what was logged (and how often). */
export function captureLogger(): Logger & { entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  const at = (level: LogEntry['level']) => (obj: object, msg: string) => {
    entries.push({ level, obj: obj as Record<string, unknown>, msg });
  };
  return { entries, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

export const backoff = { initialMs: 50, maxMs: 300, factor: 2, jitter: 0.5 };

export const fastTimings: Partial<ReflectorTimings> = {
  resyncPeriodMs: 60_000,
  watchTimeoutSeconds: 30,
  watchSilenceMs: 1_500,
  watchdogIntervalMs: 100,
  listTimeoutMs: 2_000,
  healthyWatchMs: 300,
  backoff,
};

/** The local node "a" (eu) before its agent ran: only what the operator and kubelet wrote. */
export function bareLocalNode() {
  return node('a', { location: 'eu', key: null, lastSeen: null, podCIDR: '10.42.0.0/24' });
}

export function seedCluster(api: TestApiServer): void {
  api.addNode(bareLocalNode());
  api.addNode(
    node('b', {
      location: 'eu',
      endpoint: '198.51.100.2:51820',
      internalIP: '192.168.0.2/24',
      podCIDR: '10.42.1.0/24',
    }),
  );
  api.addNode(
    node('c', { location: 'us', endpoint: '203.0.113.3:51820', internalIP: '192.168.1.3/24', podCIDR: '10.42.2.0/24' }),
  );
  api.addPeer(peer('laptop', { allowedIPs: ['10.5.0.1/32'] }));
}

export interface Harness {
  api: TestApiServer;
  source: KubernetesSource;
  agent: Agent;
  device: FakeWireGuardDevice;
  kernel: FakeKernel;
  netfilter: FakeNetfilter;
  metrics: AgentMetrics;
  log: ReturnType<typeof captureLogger>;
  /** The agent's clock in ms; tests move it. */
  clock: { ms: number };
  publicKey: string;
  privateKey: string;
  /** iptables-restore runs so far (firewall writes). */
  firewallWrites(): number;
  /** Device peers' public keys, sorted. */
  peerKeys(): Promise<string[]>;
  /** The fake firewall, for an agent restarted on the same machine (restartOf). */
  firewall: ReturnType<typeof createFakeFirewall>;
}

export interface HarnessOptions {
  seed?: (api: TestApiServer) => void;
  mesh?: Partial<MeshOptions>;
  agent?: Partial<AgentOptions>;
  /** Extra dependencies of the agent (e.g. the --compatibility=cilium lookups). */
  deps?: Partial<Pick<AgentDeps, 'encapsulationDevice' | 'watchRouting' | 'paths' | 'keyRotation'>>;
  /** Start the agent (default true). */
  start?: boolean;
  /** kg's --metrics-per-peer. */
  metricsPerPeer?: boolean;
  /**
   * A new agent on the machine and cluster of this harness (its agent stopped first): the same API
   * server, WireGuard device, kernel, firewall and key; nothing is seeded.
   */
  restartOf?: Harness;
  /** What the agent reads instead of the KubernetesSource itself (which `source` still is). */
  wrapSource?: (source: KubernetesSource) => ClusterSource;
}

/** Builds everything, starts the agent and waits until the local node is published and planned. */
export async function startHarness(t: TestContext, o: HarnessOptions = {}): Promise<Harness> {
  const before = o.restartOf;
  const api = before?.api ?? (await TestApiServer.start({ bookmarkIntervalMs: 200 }));
  const log = captureLogger();
  const clock = { ms: NOW * 1000 };
  const source = new KubernetesSource({
    kubeConfig: kubeConfigFor(api),
    timings: fastTimings,
    requestTimeoutMs: 2_000,
  });
  const kernel = before?.kernel ?? new FakeKernel();
  if (!before) {
    kernel.addLink('eth0', { addresses: ['192.168.0.1/24'] });
    kernel.addLink('kilo0', { up: false, mtu: 1420 });
    kernel.addLink('tunl0', {});
  }
  const device = before?.device ?? new FakeWireGuardDevice('kilo0');
  const fw = before?.firewall ?? createFakeFirewall();
  const metrics = new AgentMetrics({ perPeer: o.metricsPerPeer ?? false });
  const privateKey = before?.privateKey ?? generatePrivateKey();
  const mesh: MeshOptions = { ...defaultMeshOptions, ...o.mesh };
  const agent = new Agent({
    source: o.wrapSource?.(source) ?? source,
    dataplane: { device, links: new FakeLinks(kernel), routes: fakeRoutingTables(kernel), firewall: fw.tables },
    host: new FakeHost(kernel),
    privateKey,
    facts: { internalIP: Cidr.parse('192.168.0.1/24'), endpointIP: IP.parse('198.51.100.1') },
    log,
    metrics,
    clock: () => clock.ms,
    ...o.deps,
    options: {
      hostname: 'a',
      mesh,
      interfaceName: 'kilo0',
      topologyLabel: 'topology.kubernetes.io/region',
      resyncPeriodMs: 600_000,
      mtu: null,
      cleanUp: true,
      cleanUpInterface: false,
      coalesceMs: 30,
      staleAfterMs: 120_000,
      ...o.agent,
    },
  });
  t.after(async () => {
    await agent.stop().catch(() => undefined);
    await source.stop().catch(() => undefined);
    if (!before) await api.close();
  });
  if (!before) (o.seed ?? seedCluster)(api);
  const h: Harness = {
    api,
    source,
    agent,
    device,
    kernel,
    netfilter: fw.netfilter,
    metrics,
    log,
    clock,
    publicKey: publicKeyOf(privateKey),
    privateKey,
    firewallWrites: () => fw.netfilter.runs.filter((r) => /restore/.test(r[0] ?? '')).length,
    peerKeys: async () => (await device.read()).peers.map((p) => p.publicKey).sort(),
    firewall: fw,
  };
  if (o.start !== false) {
    await agent.start();
    await waitUntil(
      'the agent planned and applied',
      () => agent.status.plan !== null && agent.status.lastReconcileOk,
      10_000,
    );
  }
  return h;
}

/**
 * Waits until the agent's source holds every Node and Peer as the API server does (the same
 * resourceVersions) and the agent has nothing pending: no reconcile running or scheduled. Idle alone
 * is not settled: the watch paces its reads (watch.ts), so the event of the agent's own last patch
 * may still be on its way, and it would make one more pass after the test has looked.
 */
export async function settled(h: Harness): Promise<void> {
  await waitUntil("the agent has seen the API server's objects and is idle", () => caughtUp(h) && h.agent.idle, 10_000);
}

function caughtUp(h: Harness): boolean {
  const stored = [
    ...h.api.nodeNames().map((n) => `Node/${n}@${h.api.node(n)?.metadata?.resourceVersion}`),
    ...h.api.peerNames().map((n) => `Peer/${n}@${h.api.peer(n)?.metadata?.resourceVersion}`),
  ];
  const seen = new Set(h.source.objects().map((o) => `${o.kind}/${o.metadata?.name}@${o.metadata?.resourceVersion}`));
  return seen.size === stored.length && stored.every((k) => seen.has(k));
}

/** Waits until the agent's view of the cluster holds `name`'s check-in at `at` (seconds). */
export function seesCheckIn(
  h: Harness,
  name: string,
  at: number,
  what = `the agent saw ${name} check in`,
): Promise<void> {
  return eventually(what, () =>
    h.source
      .objects()
      .some((o) => o.metadata?.name === name && o.metadata.annotations?.[Annotation.lastSeen] === String(at)),
  );
}

/** Polls an asynchronous condition until it holds (a liveness wait, not a timing assertion). */
export async function eventually(
  what: string,
  condition: () => Promise<boolean> | boolean,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
