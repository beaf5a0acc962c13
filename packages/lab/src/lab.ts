import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeObject } from '../../../src/model/parse.js';
import { Annotation } from '../../../src/model/annotations.js';
import type { Granularity } from '../../../src/model/types.js';
import { UsageError } from '../../../src/model/errors.js';
import { LabApiClient } from './client.js';
import {
  apiNs,
  apiPort,
  clusterPlan,
  initialNodes,
  internetPrefix,
  labNode,
  locationLabel,
  locationName,
  natKeepaliveSeconds,
  natOf,
  peerName,
  type LabNode,
  type LabOptions,
} from './layout.js';
import {
  buildApiNetwork,
  buildInternet,
  buildLocation,
  buildNode,
  buildPeerNetwork,
  removeNodeNetwork,
} from './network.js';
import { apiAddressIPv6, hostText } from './families.js';
import { hasIPv6 } from './network-ipv6.js';
import { labFamilies, podEndpointsOf, subnetFlags } from './lab-families.js';
import { ensureKiloKeyMountPoint, inKiloNodeNs, kiloArgv, kiloKeyDir, kiloStartedLine } from './kilo-agent.js';
import { cliArgv, killNamespaceProcesses, startRecorded, stopProcess } from './processes.js';
import { configurePeer, createPeerObject, peerEndpoint, resetPeerDevice } from './peer.js';
import { allOk, allPairs, firstReplies, pingPairs, type Endpoint, type Matrix, type Pair } from './probe.js';
import { inNodeNs, run, sleep } from './sh.js';
import { StateDir, isAlive, stateFile, type LabState } from './state.js';
import { teardown } from './teardown.js';

export interface AgentStartOptions {
  /** --clean-up for this start (default true). */
  cleanUp?: boolean;
}

const pairName = (p: Pair): string => `${p.s.name}→${p.d.name}`;

/** Up to six names, then how many more. */
const abbreviated = (names: readonly string[]): string =>
  names.length <= 6 ? names.join(', ') : `${names.slice(0, 6).join(', ')} and ${names.length - 6} more`;

/** The mesh did not converge: a finding about the cluster (which pairs never got through), not a bug. */
export class NotConverged extends Error {
  constructor(
    readonly timeoutMs: number,
    /** The pairs that never got a reply, as `from→to`. */
    readonly failing: readonly string[],
    /** How many pairs were probed in all. */
    readonly pairs: number,
  ) {
    super(`the mesh did not converge within ${timeoutMs} ms; failing: ${failing.join(', ')}`);
  }
}

/**
 * One lab: its state directory and everything recorded in it. Built by `up`, reopened by every
 * other command (and by the end-to-end tests) from the state directory alone.
 */
export class Lab {
  readonly api: LabApiClient;

  private constructor(readonly state: StateDir) {
    this.api = new LabApiClient(state.path('api.sock'));
  }

  get options(): LabOptions {
    return this.state.state.options;
  }

  get nodes(): LabNode[] {
    return this.state.state.nodes;
  }

  /** The kubeconfig for this machine's own namespace (kubectl, kgctl): through the host proxy. */
  get kubeconfig(): string {
    return this.state.path('kubeconfig');
  }

  /** The kubeconfig inside the lab's namespaces (the agents): the API server's lab address. */
  get labKubeconfig(): string {
    return this.state.path('kubeconfig.lab');
  }

  /** The API server's objects as a List file: a `kgctl --cluster` snapshot. */
  get clusterFile(): string {
    return this.state.path('cluster.json');
  }

  node(name: string): LabNode {
    const n = this.nodes.find((x) => x.name === name);
    if (!n)
      throw new Error(
        `lab node ${JSON.stringify(name)} does not exist (nodes: ${this.nodes.map((x) => x.name).join(', ')})`,
      );
    return n;
  }

  nodeDir(name: string): string {
    return this.state.path('nodes', name);
  }

  runDir(name: string): string {
    return this.state.path('nodes', name, 'run');
  }

  static open(dir: string): Lab {
    return new Lab(StateDir.load(dir));
  }

  /** The ranges of this lab's cluster (cluster 1 unless it is one of several). */
  get plan(): ReturnType<typeof clusterPlan> {
    return clusterPlan(this.options.cluster);
  }

  /** Cluster N of the lab in `dir` (1: the lab itself; N > 1: its `cluster-N` directory). */
  static openCluster(dir: string, cluster: number): Lab {
    if (cluster === 1) return Lab.open(dir);
    const sub = clusterDir(dir, cluster);
    if (!existsSync(stateFile(sub)))
      throw new UsageError(
        `the lab in ${dir} has no cluster ${cluster} (it was not brought up with --clusters ${cluster})`,
      );
    return Lab.open(sub);
  }

  /** Every cluster of the lab in `dir`, cluster 1 first. */
  static openAll(dir: string): Lab[] {
    const out = [Lab.open(dir)];
    for (let c = 2; existsSync(stateFile(clusterDir(dir, c))); c++) out.push(Lab.open(clusterDir(dir, c)));
    return out;
  }

  /**
   * `clusters` clusters on one internet (cluster 1 builds it and keeps the one-cluster layout; the
   * others live in STATE_DIR/cluster-N, with the ranges of clusterPlan(N)). With more than one,
   * each cluster's kubeconfig is also STATE_DIR/kubeconfig-N. On failure, tears down all.
   */
  static async upClusters(
    dir: string,
    options: LabOptions,
    clusters: number,
    log: (line: string) => void = () => {},
  ): Promise<Lab[]> {
    const first = await Lab.up(dir, { ...options, cluster: 1 }, log);
    const labs = [first];
    try {
      for (let c = 2; c <= clusters; c++) {
        const tag = clusterPlan(c).tag;
        log(`cluster ${c}:`);
        const lab = await Lab.up(
          clusterDir(dir, c),
          { ...options, cluster: c, prefix: `${options.prefix}${tag}`, internetPrefix: options.prefix, peer: false },
          log,
        );
        labs.push(lab);
      }
      if (clusters > 1) for (const lab of labs) copyFileSync(lab.kubeconfig, clusterKubeconfig(dir, lab.plan.cluster));
      return labs;
    } catch (e) {
      await teardown(dir);
      throw e;
    }
  }

  /**
   * Builds the network, starts the API server, creates the Node (and Peer) objects and starts an
   * agent per node. Does not wait for the mesh: see converge(). On failure, tears down what it made.
   */
  static async up(dir: string, options: LabOptions, log: (line: string) => void = () => {}): Promise<Lab> {
    const initial: LabState = {
      options,
      nodes: [],
      agentFlags: [...(options.agentFlags ?? [])],
      nextK: 1,
      peerPublicKey: null,
      made: [],
    };
    const createdDir = !existsSync(dir);
    const state = StateDir.create(dir, initial);
    if (createdDir) state.record({ kind: 'dir', path: dir });
    const lab = new Lab(state);
    try {
      await lab.build(log);
      return lab;
    } catch (e) {
      log(`up failed (${(e as Error).message}); tearing down`);
      await teardown(dir);
      throw e;
    }
  }

  private async build(log: (line: string) => void): Promise<void> {
    const o = this.options;
    const t0 = Date.now();
    // wireguard-go's socket directory is bound over this path in each node: it must exist.
    if (!existsSync('/var/run/wireguard')) {
      mkdirSync('/var/run/wireguard', { recursive: true, mode: 0o700 });
      this.state.record({ kind: 'dir', path: '/var/run/wireguard' });
    }
    const inet = internetPrefix(o);
    const plan = this.plan;
    if (plan.cluster === 1) buildInternet(this.state, o.prefix, o.ipFamily);
    buildApiNetwork(this.state, o.prefix, inet, plan.cluster, o.ipFamily);
    for (let l = 1; l <= o.locations; l++)
      buildLocation(this.state, o.prefix, l, natOf(o, l), plan.siteOffset + l, inet, o.ipFamily);
    for (const n of initialNodes(o)) {
      buildNode(this.state, o.prefix, n, inet);
      this.state.state.nodes.push(n);
      this.state.state.nextK = n.k + 1;
      this.state.save();
    }
    if (o.peer) buildPeerNetwork(this.state, o.prefix, o.ipFamily);
    log(
      `network: ${this.state.state.made.filter((m) => m.kind === 'netns').length} namespaces in ${Date.now() - t0} ms`,
    );
    await this.startApiServer();
    await this.startHostProxy();
    for (const n of this.nodes) await this.api.create('nodes', this.nodeObject(n));
    if (o.peer) await createPeerObject(this);
    for (const n of this.nodes) this.startAgent(n.name);
    log(`API server at ${this.apiURL}, ${this.nodes.length} agents started (${o.granularity})`);
  }

  /**
   * The API server as the agents reach it. With IPv6 every node has it (some only it): the agents
   * reach the API server over IPv6.
   */
  get apiURL(): string {
    const six = hasIPv6(this.options.ipFamily);
    return `http://${six ? hostText(apiAddressIPv6(this.plan.siteOffset)) : this.plan.apiAddress}:${apiPort}`;
  }

  private async startApiServer(readyTimeoutMs = 20_000): Promise<void> {
    const six = hasIPv6(this.options.ipFamily);
    writeFileSync(this.labKubeconfig, kubeconfigYaml(this.apiURL));
    const argv = [
      'ip',
      'netns',
      'exec',
      apiNs(this.options.prefix),
      ...cliArgv('kg'),
      'lab',
      'apiserver',
      '--listen',
      `${six ? '[::]' : '0.0.0.0'}:${apiPort}`,
      '--socket',
      this.state.path('api.sock'),
      '--state',
      this.clusterFile,
      '--service-cluster-ip-range',
      this.plan.serviceCidr,
    ];
    startRecorded(this.state, 'apiserver', argv, this.state.path('apiserver.log'));
    await this.api.waitReady(readyTimeoutMs);
  }

  /**
   * Stops the API server (SIGKILL: a crash) and starts it again on its state file: objects and
   * revision persist as a real API server's do in etcd. Resolves once it answers.
   */
  async restartApiServer(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const p = this.state.state.made.find((m) => m.kind === 'process' && m.what === 'apiserver');
    if (p && p.kind === 'process' && isAlive(p)) await stopProcess(p, signal, 10_000);
    this.state.forget((m) => m.kind === 'process' && m.what === 'apiserver');
    // Importing the Kubernetes client takes the new process seconds, many on a loaded machine.
    await this.startApiServer(60_000);
  }

  /**
   * Cuts the nodes off the API server (true) or lets them through again (false): its packets are
   * dropped silently, as in a partition, so open connections hang rather than fail. The lab's
   * own Unix socket keeps working.
   */
  setApiServerReachable(reachable: boolean): void {
    const port = String(apiPort);
    const rules = [
      ['INPUT', '-i', 'pub0', '-p', 'tcp', '--dport', port, '-j', 'DROP'],
      ['OUTPUT', '-o', 'pub0', '-p', 'tcp', '--sport', port, '-j', 'DROP'],
    ];
    const ns = apiNs(this.options.prefix);
    const tools = hasIPv6(this.options.ipFamily) ? ['iptables', 'ip6tables'] : ['iptables'];
    for (const tool of tools)
      for (const rule of rules) {
        if (reachable) run(['ip', 'netns', 'exec', ns, tool, '-D', ...rule], { allowFail: true });
        else run(['ip', 'netns', 'exec', ns, tool, '-I', ...rule]);
      }
  }

  /**
   * The API server's namespace is out of the host's reach: kubectl and kgctl on the machine go
   * through a proxy on a free port of the host's loopback (free: labs run side by side). It
   * forwards to the Unix socket, so it outlives restarts of the API server.
   */
  private async startHostProxy(): Promise<void> {
    const portFile = this.state.path('apiproxy.port');
    rmSync(portFile, { force: true });
    const proxy = [
      ...cliArgv('kg'),
      'lab',
      'apiproxy',
      '--socket',
      this.state.path('api.sock'),
      '--port-file',
      portFile,
    ];
    startRecorded(this.state, 'apiserver proxy (host)', proxy, this.state.path('apiproxy.log'));
    const deadline = Date.now() + 30_000;
    while (!existsSync(portFile) || !readFileSync(portFile, 'utf8').endsWith('\n')) {
      if (Date.now() > deadline)
        throw new Error(`the API server proxy did not start; see ${this.state.path('apiproxy.log')}`);
      await sleep(50);
    }
    const port = Number(readFileSync(portFile, 'utf8'));
    writeFileSync(this.kubeconfig, kubeconfigYaml(`http://127.0.0.1:${port}`));
  }

  nodeObject(n: LabNode): KubeObject {
    const annotations: Record<string, string> = {};
    // Behind NAT a node keeps its mappings open; the others learn where it is from WireGuard.
    if (!n.publicIP) annotations[Annotation.persistentKeepalive] = String(natKeepaliveSeconds);
    return {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: n.name, labels: { [locationLabel]: locationName(n.location) }, annotations },
      // A dual-stack node: IPv4 first, as kube-controller-manager gives them.
      spec:
        n.ipv6 && n.ipv6.podCIDR !== n.podCIDR
          ? { podCIDR: n.podCIDR, podCIDRs: [n.podCIDR, n.ipv6.podCIDR] }
          : { podCIDR: n.podCIDR },
    };
  }

  // ---- agents ----------------------------------------------------------------------------

  /** The recorded agent process of a node, if it runs. */
  agentProcess(name: string): { pid: number; start: string } | null {
    const p = this.state.state.made.find((m) => m.kind === 'process' && m.what === `kg ${name}`);
    return p && p.kind === 'process' && isAlive(p) ? p : null;
  }

  /**
   * Which agent a node runs from its next start: Kilo's `kg` at `binary`, or kilo-ts (null).
   * The key stays (see kilo-agent.ts), so a switch is what an operator's rollout does.
   */
  setKiloAgent(name: string, binary: string | null): void {
    this.node(name);
    const agents = { ...this.options.kiloAgents };
    if (binary === null) delete agents[name];
    else agents[name] = binary;
    this.state.state.options.kiloAgents = agents;
    this.state.save();
  }

  /** The path of Kilo's `kg` a node runs, or null when it runs kilo-ts. */
  kiloAgent(name: string): string | null {
    return this.options.kiloAgents?.[name] ?? null;
  }

  startAgent(name: string, o: AgentStartOptions = {}): number {
    const n = this.node(name);
    if (this.agentProcess(name)) throw new Error(`the agent of ${name} is already running`);
    this.state.forget((m) => m.kind === 'process' && m.what === `kg ${name}`);
    mkdirSync(this.runDir(name), { recursive: true, mode: 0o700 });
    const kilo = this.kiloAgent(name);
    if (kilo !== null) {
      // Kilo has no --clean-up=false in this build (it always cleans up): o.cleanUp does not apply.
      if (ensureKiloKeyMountPoint()) this.state.record({ kind: 'dir', path: kiloKeyDir });
      const args = {
        binary: kilo,
        hostname: n.name,
        kubeconfig: this.labKubeconfig,
        granularity: this.options.granularity,
      };
      const argv = inKiloNodeNs(n.ns, this.runDir(name), this.nodeDir(name), kiloArgv(args));
      return startRecorded(this.state, `kg ${name}`, argv, `${this.nodeDir(name)}/kg.log`);
    }
    const argv = inNodeNs(n.ns, this.runDir(name), [
      ...cliArgv('kg'),
      '--hostname',
      n.name,
      '--kubeconfig',
      this.labKubeconfig,
      '--mesh-granularity',
      this.options.granularity,
      // These machines have no ipip: inside a location packets go in the clear.
      '--encapsulate=never',
      `--clean-up=${o.cleanUp ?? true}`,
      '--key-file',
      `${this.nodeDir(name)}/key`,
      '--listen',
      '127.0.0.1:1107',
      // Clusters after the first need their own WireGuard subnet (cluster 1 keeps Kilo's default);
      // with IPv6, one of that family too.
      ...subnetFlags(this.plan, this.options.ipFamily),
      ...this.state.state.agentFlags,
    ]);
    return startRecorded(this.state, `kg ${name}`, argv, `${this.nodeDir(name)}/kg.log`);
  }

  /** Stops a node's agent: SIGTERM (it cleans up per its --clean-up) or SIGKILL (a crash). */
  async stopAgent(name: string, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const p = this.agentProcess(name);
    if (p) await stopProcess(p, signal, 10_000);
    this.state.forget((m) => m.kind === 'process' && m.what === `kg ${name}`);
  }

  /**
   * Restarts every agent with a new granularity (and flags), as an operator rolling out a
   * changed DaemonSet would: stop all, start all, no manual clean-up in between. Resolves once
   * every new agent has read the cluster, with when that was (process start-up on a loaded
   * machine takes seconds that say nothing about the mesh).
   */
  async restartAgents(
    granularity: Granularity,
    extraFlags: string[] = this.state.state.agentFlags,
  ): Promise<{ startedAt: number; syncedAt: number }> {
    await Promise.all(this.nodes.map((n) => this.stopAgent(n.name)));
    this.state.state.options.granularity = granularity;
    this.state.state.agentFlags = extraFlags;
    this.state.save();
    const offsets = new Map(this.nodes.map((n) => [n.name, this.agentLogSize(n.name)]));
    const startedAt = Date.now();
    for (const n of this.nodes) this.startAgent(n.name);
    await this.waitAgentsSynced(offsets);
    return { startedAt, syncedAt: Date.now() };
  }

  agentLogSize(name: string): number {
    try {
      return statSync(`${this.nodeDir(name)}/kg.log`).size;
    } catch {
      return 0;
    }
  }

  /** Waits until each agent started after its log had `offsets` bytes has read the cluster. */
  async waitAgentsSynced(offsets: ReadonlyMap<string, number>, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const pending = new Set(offsets.keys());
    while (pending.size > 0) {
      for (const name of pending) {
        const log = readFileSync(`${this.nodeDir(name)}/kg.log`)
          .subarray(offsets.get(name) ?? 0)
          .toString('utf8');
        if (log.includes(this.kiloAgent(name) === null ? '"cluster synced"' : kiloStartedLine)) pending.delete(name);
      }
      if (pending.size === 0) return;
      if (Date.now() > deadline)
        throw new Error(
          `agents did not read the cluster within ${timeoutMs} ms: ${[...pending].join(', ')} (see their kg.log)`,
        );
      await sleep(50);
    }
  }

  // ---- nodes joining and leaving ------------------------------------------------------------

  /** A new node in a location: its namespaces, its Node object (created at `createdAt`), its agent. */
  async addNode(location: number): Promise<{ node: LabNode; createdAt: number }> {
    const used = new Set(this.nodes.filter((n) => n.location === location).map((n) => n.index));
    let index = 1;
    while (used.has(index)) index++;
    const n = labNode(
      this.options.prefix,
      location,
      index,
      this.state.state.nextK,
      natOf(this.options, location) !== null,
      this.options.cluster,
      this.options,
    );
    buildNode(this.state, this.options.prefix, n, internetPrefix(this.options));
    this.state.state.nodes.push(n);
    this.state.state.nextK = n.k + 1;
    this.state.save();
    const createdAt = Date.now();
    await this.api.create('nodes', this.nodeObject(n));
    this.startAgent(n.name);
    return { node: n, createdAt };
  }

  /** A node leaves: its Node object is deleted, its agent stopped, its namespaces removed. */
  async removeNode(name: string): Promise<void> {
    const n = this.node(name);
    await this.api.delete('nodes', name);
    await this.stopAgent(name, 'SIGKILL');
    await killNamespaceProcesses(n.ns);
    await killNamespaceProcesses(n.podNs);
    removeNodeNetwork(this.state, n);
    this.state.state.nodes = this.nodes.filter((x) => x.name !== name);
    this.state.save();
    rmSync(this.nodeDir(name), { recursive: true, force: true });
  }

  // ---- the Peer ------------------------------------------------------------------------------

  /** Re-reads the Peer's configuration from `kgctl showconf peer` and applies it. */
  async refreshPeer(): Promise<void> {
    await configurePeer(this);
  }

  async removePeer(): Promise<void> {
    await this.api.delete('peers', peerName);
  }

  /** The Peer's tunnel from scratch at its next refresh (see resetPeerDevice). */
  async resetPeer(): Promise<void> {
    await resetPeerDevice(this);
  }

  async addPeer(): Promise<void> {
    await createPeerObject(this);
    await this.refreshPeer();
  }

  // ---- observing -----------------------------------------------------------------------------

  /** Every pod as a ping target: by its name on its first address, by `NAME/v6` on a dual-stack pod's IPv6 one. */
  podEndpoints(): Endpoint[] {
    return podEndpointsOf(this.nodes);
  }

  /** Pod→pod, plus Peer→pod when the lab has a Peer (and it is configured). */
  matrix(o: { waitSeconds?: number; peer?: boolean } = {}): Promise<Matrix> {
    return pingPairs(this.pairs(o.peer ?? this.options.peer), o);
  }

  /** Pod→pod (and Peer→pod) in each family the pods have: never from one family to the other. */
  pairs(peer: boolean): Pair[] {
    return labFamilies(this.nodes).flatMap((family) => {
      const pods = this.podEndpoints().filter((e) => e.family === family);
      return allPairs(peer ? [...pods, peerEndpoint(this, family)] : pods, pods);
    });
  }

  /** Waits until every node has published its key and endpoint (the Peer's config needs them). */
  async waitNodesAnnounced(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const objects = await this.api.list('nodes');
      const missing = this.nodes.filter((n) => {
        const a = objects.find((o) => o.metadata?.name === n.name)?.metadata?.annotations ?? {};
        return !a[Annotation.key] || !a[Annotation.endpoint] || !a[Annotation.lastSeen];
      });
      if (missing.length === 0) return;
      if (Date.now() > deadline)
        throw new Error(
          `nodes did not announce themselves within ${timeoutMs} ms: ${missing.map((n) => n.name).join(', ')}`,
        );
      await sleep(100);
    }
  }

  /**
   * Waits until every pod reaches every pod (and the Peer every pod). Returns the confirming
   * full matrix, when the last pair got through (`at`) and how long after the call that was;
   * throws with the failing pairs after `timeoutMs`.
   */
  async converge(
    timeoutMs = 90_000,
    o: { peer?: boolean; progress?: (line: string) => void; progressEveryMs?: number } = {},
  ): Promise<{ matrix: Matrix; ms: number; at: number }> {
    const t0 = Date.now();
    const withPeer = o.peer ?? this.options.peer;
    if (withPeer) {
      await this.waitNodesAnnounced(timeoutMs);
      await this.refreshPeer();
    }
    // Endpoints discovered behind NAT reach the Peer's config only through the Node objects:
    // its owner re-runs kgctl showconf now and then, as the lab does here.
    let refreshing = false;
    const refresher = withPeer
      ? setInterval(() => {
          if (refreshing) return;
          refreshing = true;
          this.refreshPeer()
            .catch(() => undefined)
            .finally(() => (refreshing = false));
        }, 5000)
      : null;
    try {
      let pending = this.pairs(withPeer);
      let at = t0;
      for (;;) {
        const left = timeoutMs - (Date.now() - t0);
        const all = this.pairs(withPeer).length;
        const progress = o.progress;
        const tick = progress && {
          everyMs: o.progressEveryMs ?? 10_000,
          call: (so: readonly (number | null)[]) => {
            const waiting = pending.filter((_, i) => so[i] === null).map(pairName);
            progress(
              `  ${Math.round((Date.now() - t0) / 1000)} s: ${all - waiting.length} of ${all} pairs got through; waiting for ${abbreviated(waiting)}`,
            );
          },
        };
        const first = await firstReplies(pending, Math.max(left, 0), tick);
        const failing = pending.filter((_, i) => first[i] === null);
        if (failing.length > 0) throw new NotConverged(timeoutMs, failing.map(pairName), all);
        at = Math.max(at, ...(first as number[]));
        // Every pair got through at some point: a full matrix confirms they all still do.
        const full = await this.matrix({ waitSeconds: 1, peer: withPeer });
        if (allOk(full)) return { matrix: full, ms: at - t0, at };
        const failed = new Set(full.filter((e) => !e.ok).map((e) => `${e.from}\u0000${e.to}`));
        pending = this.pairs(withPeer).filter((p) => failed.has(`${p.s.name}\u0000${p.d.name}`));
      }
    } finally {
      if (refresher) clearInterval(refresher);
      while (refreshing) await sleep(50);
    }
  }

  /** `ip route get DST` in a node's namespace. */
  routeGet(node: string, dst: string): string {
    return run(['ip', '-n', this.node(node).ns, 'route', 'get', dst]).trim();
  }

  /** GET from a node's agent (/health, /metrics, /graph), through a process inside its namespace. */
  agentGet(node: string, path: string): { ok: boolean; body: string } {
    const script =
      'fetch(process.argv[1]).then(async (r) => { process.stdout.write(await r.text()); process.exitCode = r.ok ? 0 : 1; }, (e) => { process.stdout.write(String(e.cause?.message ?? e.message)); process.exitCode = 2; })';
    const r = spawnSync(
      'ip',
      ['netns', 'exec', this.node(node).ns, process.execPath, '-e', script, `http://127.0.0.1:1107${path}`],
      { encoding: 'utf8', timeout: 30_000 },
    );
    return { ok: r.status === 0, body: r.stdout ?? '' };
  }

  /** Runs a command inside a node's namespace as its agent sees the machine (`wg` works there). */
  exec(
    node: string,
    argv: readonly string[],
    stdio: 'pipe' | 'inherit' = 'pipe',
  ): { code: number; stdout: string; stderr: string } {
    const full = inNodeNs(this.node(node).ns, this.runDir(node), argv);
    const r = spawnSync(full[0]!, full.slice(1), { encoding: 'utf8', stdio });
    return { code: r.status ?? -1, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
  }

  async down(): Promise<void> {
    await teardown(this.state.dir);
  }
}

/** Where cluster N (N > 1) of the lab in `dir` keeps its state. */
export const clusterDir = (dir: string, cluster: number): string => join(dir, `cluster-${cluster}`);

/** STATE_DIR/kubeconfig-N: cluster N's kubeconfig for this machine (labs of more than one cluster). */
export const clusterKubeconfig = (dir: string, cluster: number): string => join(dir, `kubeconfig-${cluster}`);

function kubeconfigYaml(server: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    `clusters: [{name: lab, cluster: {server: "${server}"}}]`,
    'users: [{name: lab, user: {}}]',
    'contexts: [{name: lab, context: {cluster: lab, user: lab}}]',
    'current-context: lab',
    '',
  ].join('\n');
}
