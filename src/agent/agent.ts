import type { ClusterSource, Logger, ObjectUpdate } from '../backend/source.js';
import type { Host } from '../host/host.js';
import { reconcile, cleanUp, type Dataplane, type ReconcileResult } from '../dataplane/reconcile.js';
import type { RoutingEvent } from '../dataplane/monitor.js';
import { summarizePeerChanges } from '../dataplane/log-summary.js';
import { DataplaneMemory } from '../dataplane/cache.js';
import type { DeviceNames, WireGuardState } from '../dataplane/types.js';
import { planNode } from '../mesh/plan.js';
import { PlanMemo } from '../mesh/plan-memo.js';
import { topologyOf } from '../mesh/compute.js';
import type { MeshOptions } from '../mesh/options.js';
import { TopologyError, type Topology } from '../mesh/topology.js';
import type { Plan } from '../mesh/types.js';
import { formatEndpoint, parseCluster, parseEndpoint, type ParsedCluster } from '../model/parse.js';
import { ParseMemo } from './parse-memo.js';
import { RoamingReads } from './roaming-reads.js';
import { Annotation, lastSeenIntervalSeconds } from '../model/annotations.js';
import { judgeReadiness, rememberCheckIn, type ReadinessMemory } from '../model/ready.js';
import type { Endpoint, KiloNode } from '../model/types.js';
import type { Cidr, IP } from '../net/cidr.js';
import type { ByFamily } from '../net/family.js';
import { syncCNIConfig } from './cni.js';
import { interfaceHolding } from './discovery.js';
import { onlyLastSeenMoved } from './heartbeat.js';
import { annotationPatch } from './local-node.js';
import { lostIPv6Pods } from '../model/ipv6-pods.js';
import { publishedWireGuardIP, publishedWireGuardIPv6 } from './published-wireguard-ip.js';
import { mixedAllocation } from '../mesh/allocation-mix.js';
import type { AgentMetrics } from './metrics.js';
import { keepRoamingEndpoints } from './roaming.js';
import { RekeyedEndpoints } from './rekeyed-endpoints.js';
import { handshakeAddresses } from './handshake-primer.js';
import { isNodeReady } from '../model/ready.js';
import { annotationElection, type LeaderElection } from '../election/leader-election.js';
import { LeadershipLog } from './leadership.js';
import { HostEncapsulation } from './encapsulation.js';
import { encapsulationOf, type EncapsulationDevice, type Encapsulator } from '../encapsulation/index.js';
import type { PathHealth } from './path-health.js';
import { KeyRotation, type KeyRotationOptions } from './key-rotation.js';
import { RelayWatch } from './relay-watch.js';
import { CutOffWatch } from './cut-off-watch.js';
import { RelayedTraffic } from './relay-bytes.js';
import { formatUnreachable } from '../model/relay-annotations.js';
import { publishedUnreachable } from './relay-detect.js';

export interface AgentOptions {
  hostname: string;
  mesh: MeshOptions;
  interfaceName: string;
  topologyLabel: string;
  /** Full resync (recompute and reconcile) even without events. */
  resyncPeriodMs: number;
  /** null leaves the MTU alone. */
  mtu: number | null;
  /** On stop: remove routes, rules and firewall (and the interface with cleanUpInterface). */
  cleanUp: boolean;
  cleanUpInterface: boolean;
  /** Events arriving within this window are handled by one reconcile. */
  coalesceMs: number;
  /** /health fails when the backend has not synced for longer than this. */
  staleAfterMs: number;
  /** The CNI conflist whose pod subnet follows spec.podCIDR (--cni, --cni-path); null leaves CNI config alone. */
  cniPath?: string | null;
  /** The flags announced in kilo.squat.ai/mesh-flags (formatMeshFlags), so kgctl plans as this agent does. */
  meshFlags?: string;
}

/** Facts read of the host once at start: they do not change while the agent runs. */
export interface HostFacts {
  internalIP: Cidr | null;
  /** Detected endpoint address; the port is the listen port. */
  endpointIP: IP | null;
  /**
   * Dual-stack mesh only (absent otherwise): the IPv6 internal IP and endpoint address beside the
   * IPv4 ones, published in the *-ipv6 annotations (docs/annotations.md#dual-stack).
   */
  ipv6InternalIP?: Cidr | null;
  ipv6EndpointIP?: IP | null;
}

export interface AgentDeps {
  source: ClusterSource;
  dataplane: Dataplane;
  /** The host around the dataplane: its addresses and devices (the private interface, the encapsulation's). */
  host: Host;
  privateKey: string;
  facts: HostFacts;
  options: AgentOptions;
  log: Logger;
  metrics: AgentMetrics;
  /** Milliseconds since the epoch. */
  clock?: () => number;
  /**
   * The device part of the encapsulation (its devices, set up on the first pass and after its
   * recheck period; the address it publishes) in place of the chosen one's: tests give a fake
   * machine's. Which encapsulation it is (none, ipip, flannel, cilium) is always the mesh options'
   * choice, and the plan is made with that choice's pure part.
   */
  encapsulationDevice?: EncapsulationDevice;
  /**
   * Reports changes to Kilo's routes, rules and interface as the kernel makes them (routing
   * monitor). With it, a reconcile triggered by the cluster trusts the last write and reads
   * nothing; a change nobody here made makes the next reconcile a full read. Without it every
   * reconcile reads the machine.
   */
  watchRouting?: (onEvent: (e: RoutingEvent) => void) => { stop(): Promise<void> };
  /** Who leads each location: Kilo's annotation rule (default) or a Lease election. */
  election?: LeaderElection;
  /** Counts a change of a location's leader (metrics). */
  leaderTransition?: (location: string) => void;
  /** Per-pair health (path-health.ts): told each plan, published on the Node. */
  paths?: PathHealth;
  /** Rotates the key on a period and on request (docs/key-rotation.md); absent: the key is kept for life. */
  keyRotation?: KeyRotationOptions;
}

export interface AgentStatus {
  lastReconcileAt: number;
  lastReconcileOk: boolean;
  lastError: string | null;
  reconciles: number;
  /** Plans computed (a pass whose inputs are the last plan's reuses it). */
  plans: number;
  plan: Plan | null;
  topology: Topology | null;
  lastResult: ReconcileResult | null;
}

/** How long after a pass a blind spell of the monitor is taken for that pass's own burst (see judge). */
const ownBurstGraceMs = 2_000;

/**
 * The control loop of `kg`: read the cluster, publish the local node, compute the plan and make
 * the machine match it — on every change (bursts coalesced) and on the resync timer.
 */
export class Agent {
  readonly status: AgentStatus = {
    lastReconcileAt: 0,
    lastReconcileOk: false,
    lastError: null,
    reconciles: 0,
    plans: 0,
    plan: null,
    topology: null,
    lastResult: null,
  };
  /** The node's key: the one the device holds and the one published, which a rotation changes. */
  private readonly keys: KeyRotation;
  private rotationTimer: NodeJS.Timeout | null = null;
  /** Endpoints of peers that changed their key, carried from their old key (rekeyed-endpoints.ts). */
  private readonly rekeyedEndpoints: RekeyedEndpoints;
  private readonly clock: () => number;
  private timers: NodeJS.Timeout[] = [];
  private pending: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private dirty = false;
  /** When the last pass ended (performance.now()), for the coalescing window. */
  private passEndedAt = -Infinity;
  private stopped = false;
  private readonly reported = new Set<string>();
  private readonly relayWatch: RelayWatch;
  private readonly cutOffWatch: CutOffWatch;
  private readonly relayedTraffic: RelayedTraffic;
  private privateIface: { ip: string; name: string | null } | null = null;
  /** The next reconcile reads the whole machine: at start, on the resync timer, after errors or foreign changes. */
  private fullReadDue = true;
  /** The next reconcile reads the WireGuard device, whatever else it trusts (roaming-reads.ts). */
  private deviceReadDue = false;
  /** What the last pass wrote, diffed against by a pass that trusts it (see dataplane/cache.ts). */
  private readonly memory = new DataplaneMemory();
  /** Routing events that arrived during a reconcile, judged once its write is remembered. */
  private heldEvents: RoutingEvent[] = [];
  /** The monitor's blind spell began while a pass ran (its own write burst, most likely): see judge. */
  private blindDuringPass = false;
  private watch: { stop(): Promise<void> } | null = null;
  private readonly election: LeaderElection;
  private readonly leadership: LeadershipLog;
  /** The plan's part of the encapsulation; `encapsulation` runs the same choice's device part. */
  private readonly encapsulator: Encapsulator;
  private readonly encapsulation: HostEncapsulation;
  /** Names of the nodes the last plan was made of: those that were ready. */
  private readyNodes = new Set<string>();
  /** Heartbeats that arrived during a reconcile, judged against the ready set it leaves. */
  private heldHeartbeats = new Set<string>();
  /** Check-ins seen, so that readiness stays as it froze while they resume after a silence. */
  private readiness: ReadinessMemory | null = null;
  /** Something besides the check-in timer asked for the pending pass: it must plan (see checkInOnly). */
  private planDue = true;
  /** What the last full pass published as discovered endpoints (the check-in pass publishes it again). */
  private lastDiscovered = new Map<string, Endpoint>();
  /** The roaming peers as the last read of WireGuard saw them, when (seconds), and by whose keys. */
  private roaming: { state: WireGuardState; at: number; of: Topology | null } | null = null;
  private roamingOf: { topology: Topology; keys: ReadonlySet<string> } | null = null;
  /** A read of the WireGuard device soon for NAT'd nodes no read has seen handshake yet (roaming-reads.ts). */
  private readonly roamingReads = new RoamingReads(() => this.readDevice());
  /** The public keys of a plan's peers, kept with the plan (see peersPlanned). */
  private plannedKeys: { plan: Plan; keys: ReadonlySet<string> } | null = null;
  /** What the mixed-allocation check last saw: the cluster's changes counted then, and the topology. */
  private allocationsChecked: { changes: number; topology: Topology | null } | null = null;
  /** Each cached object's parse: a pass parses only what changed since the last (docs/performance.md#parsing). */
  private readonly parsed = new ParseMemo();
  /** Cluster changes that may change the plan: every one but a ready node's heartbeat. */
  private clusterChanges = 0;
  /** Each remote segment's part of the last plan, reused where its inputs are equal (mesh/plan-memo.ts). */
  private readonly planMemo = new PlanMemo();
  /** The last plan and its inputs besides the fixed flags and host facts (see planned). */
  private lastPlan: { changes: number; ready: string; topology: Topology; plan: Plan } | null = null;
  /** Set once every resource has been read (start()); no pass runs before. */
  private started = false;

  constructor(private readonly deps: AgentDeps) {
    this.clock = deps.clock ?? Date.now;
    this.rekeyedEndpoints = new RekeyedEndpoints(deps.log);
    this.keys = new KeyRotation(deps.privateKey, deps.keyRotation ?? null, deps.log, deps.metrics.registry, this.clock);
    this.election = deps.election ?? annotationElection;
    this.leadership = new LeadershipLog(deps.log, deps.leaderTransition ?? (() => {}));
    this.relayWatch = new RelayWatch(deps.options.hostname, deps.log, deps.metrics.registry);
    this.cutOffWatch = new CutOffWatch(deps.log, deps.metrics.registry);
    this.relayedTraffic = new RelayedTraffic(deps.metrics.registry);
    const chosen = encapsulationOf(deps.options.mesh);
    this.encapsulator = chosen.encapsulator;
    this.encapsulation = new HostEncapsulation(deps.encapsulationDevice ?? chosen.device, deps.host, this.clock);
  }

  async start(): Promise<void> {
    const { source, options, log } = this.deps;
    await this.deps.dataplane.device.ensure();
    this.watch = this.deps.watchRouting?.((e) => this.onRoutingEvent(e)) ?? null;
    source.onChange((update) => this.onClusterChange(update));
    await source.start();
    await this.election.start(() => this.schedule(0));
    if (this.stopped) return;
    this.started = true;
    log.info(
      { node: options.hostname, granularity: options.mesh.granularity, leaderElection: this.election.mode },
      'cluster synced',
    );
    this.timers.push(setInterval(() => this.schedule(undefined, true), lastSeenIntervalSeconds * 1000));
    this.timers.push(setInterval(() => this.resync(), options.resyncPeriodMs));
    this.deps.paths?.start();
    this.armRotation();
    this.schedule(0);
  }

  /** A pass when the key rotation period runs out (the timer is re-armed by each rotation). */
  private armRotation(): void {
    if (this.rotationTimer) clearTimeout(this.rotationTimer);
    const due = this.keys.dueAt;
    if (due === null || this.stopped) return;
    // setTimeout takes at most 2^31-1 ms; a longer period re-arms on the way.
    const wait = Math.min(Math.max(0, due - this.clock()), 2 ** 31 - 1);
    this.rotationTimer = setTimeout(() => {
      this.rotationTimer = null;
      if (this.keys.dueAt !== null && this.clock() >= this.keys.dueAt) this.schedule(0);
      else this.armRotation();
    }, wait);
  }

  /** Stops the loop; with clean-up, removes what Kilo added. Waits for a running reconcile. */
  async stop(): Promise<void> {
    this.stopped = true;
    // At once: a wireguard-go signalled with the agent (a stopped Pod's container) is not restarted.
    const detached = this.deps.dataplane.device.detach();
    for (const t of this.timers) clearInterval(t);
    this.deps.paths?.stop();
    this.roamingReads.stop();
    if (this.rotationTimer) clearTimeout(this.rotationTimer);
    if (this.pending) clearTimeout(this.pending);
    // First, so the next leader takes over while this one cleans up.
    await this.election.stop();
    await this.running;
    await this.watch?.stop();
    await this.deps.source.stop();
    await detached;
    if (this.deps.options.cleanUp) {
      const errors = await cleanUp(this.deps.dataplane, { interface: this.deps.options.cleanUpInterface });
      for (const e of errors) this.deps.log.error({ err: e.message }, 'clean-up failed');
      await this.encapsulation
        .cleanUp()
        .catch((e: Error) => this.deps.log.error({ err: e.message }, 'clean-up of the encapsulation failed'));
    }
  }

  /** True when no reconcile is running, scheduled or owed (tests and shutdown wait for this). */
  get idle(): boolean {
    return this.running === null && this.pending === null && !this.dirty;
  }

  /** A reconcile that reads the whole machine, whatever the last write left. */
  resync(): void {
    this.fullReadDue = true;
    this.schedule();
  }

  /**
   * A reconcile that reads the WireGuard device (its handshakes and learned endpoints) and trusts
   * the last write for the rest: what roaming-reads.ts waits for is WireGuard's alone, and at 20,000
   * nodes a full read of routes and firewall is ~1.4 s of CPU where the device's is ~0.15.
   */
  private readDevice(): void {
    this.deviceReadDue = true;
    this.schedule();
  }

  private onRoutingEvent(e: RoutingEvent): void {
    if (this.running) this.heldEvents.push(e);
    else this.judge(e);
  }

  /**
   * A change the last write does not account for means: read everything. So does a blind spell of
   * the monitor, once it listens again ('ready'; until then every pass reads anyway). What is the
   * echo of the last write (its routes, the address it added, the link it set up) is the memory's
   * call (DataplaneMemory.explains): never a change that can drop routes without a word. A blind
   * spell that began during a pass or just after it (`held`, or within ownBurstGraceMs of its end: a
   * first apply's tens of thousands of writes overflow the monitor's socket, and `ip monitor` says
   * so only once it has drained what it had, ~0.1 s after the pass at 20,000 nodes) is made up by
   * the next pass, which reads everything, not by one at once: the resync timer brings it within
   * the resync period, as it does for a machine without a monitor. At 20,000 nodes a pass at once
   * was a second full pass right after the first apply (the agent's RSS peak, ~1.7 s of CPU).
   */
  private judge(e: RoutingEvent, held = false): void {
    const ours = this.memory.explains(e);
    // Route events come by the thousand in a first apply; the others are few, and tell why a pass read.
    if (e.kind !== 'route') this.deps.log.debug({ change: e, ours }, 'routing event');
    if (e.kind === 'lost') {
      this.fullReadDue = true;
      // Not held, it came while no pass ran (onRoutingEvent holds what comes during one).
      this.blindDuringPass = held || performance.now() - this.passEndedAt < ownBurstGraceMs;
      return;
    }
    if (e.kind === 'ready') {
      if (this.blindDuringPass) this.fullReadDue = true;
      else this.resync();
      this.blindDuringPass = false;
      return;
    }
    if (ours) return;
    if (!this.fullReadDue) this.deps.log.info({ change: e }, 'routing changed outside kilo: reading the machine again');
    this.resync();
  }

  /**
   * A heartbeat of a node that was ready changes no plan: it stays ready. Nodes going stale are
   * found by the check-in timer's pass, as before; a stale node's heartbeat makes it ready again,
   * so that one is planned.
   */
  private onClusterChange(update: ObjectUpdate | undefined): void {
    const name = update?.current.metadata?.name ?? '';
    // Every check-in, as it comes: a pass may be 30 s away, and the first after a silence marks it.
    const lastSeen =
      update?.current.kind === 'Node' ? Number(update.current.metadata?.annotations?.[Annotation.lastSeen]) : NaN;
    if (Number.isFinite(lastSeen)) this.readiness = rememberCheckIn(this.readiness, lastSeen);
    if (update && onlyLastSeenMoved(update) && this.readyNodes.has(name)) {
      this.carryParse(update);
      // The pass under way may have judged this node stale from its older last-seen.
      if (this.running) this.heldHeartbeats.add(name);
      return;
    }
    this.clusterChanges++;
    this.schedule();
  }

  /**
   * A heartbeat's object parses as the one it replaces with the new last-seen: carried over, the
   * next pass does not parse again the thousands of nodes that checked in since the last one.
   */
  private carryParse(update: ObjectUpdate): void {
    const text = update.current.metadata?.annotations?.[Annotation.lastSeen]?.trim() ?? '';
    // Only what parseNode takes as last-seen; anything else is parsed (and reported) as usual.
    if (/^\d{1,12}$/.test(text)) this.parsed.carry(update.previous, update.current, Number(text));
  }

  /**
   * Asks for a reconcile soon; many calls within the coalescing window make one. `checkIn`: only
   * the check-in timer asks (see reconcileOnce's checkInOnly).
   */
  schedule(delayMs?: number, checkIn = false): void {
    if (this.stopped) return;
    if (!checkIn) this.planDue = true;
    // start() plans once everything is read: a pass from a partial read (the Nodes listed, the
    // Peers not yet) would remove what it has not seen and add it back, resetting its sessions.
    if (!this.started) return;
    if (this.running) {
      this.dirty = true;
      return;
    }
    if (this.pending) return;
    this.pending = setTimeout(() => {
      this.pending = null;
      const checkInOnly = !this.planDue;
      this.planDue = false;
      this.running = this.reconcileOnce(checkInOnly).finally(() => {
        this.running = null;
        const held = this.heldEvents;
        this.heldEvents = [];
        for (const e of held) this.judge(e, true);
        for (const name of this.heldHeartbeats) if (!this.readyNodes.has(name)) this.dirty = true;
        this.heldHeartbeats.clear();
        this.passEndedAt = performance.now();
        if (this.dirty && !this.stopped) {
          this.dirty = false;
          this.schedule();
        }
      });
    }, delayMs ?? this.coalescingDelay());
  }

  /**
   * A change after a quiet spell starts its pass at once (in the next turn, so that the events
   * of one read of the watch go together): a node joining waits for no window. Changes that come
   * while passes run or have just run wait out the window, so a burst still makes one pass per
   * window, not one per event.
   */
  private coalescingDelay(): number {
    const window = this.deps.options.coalesceMs;
    return Math.max(0, Math.min(window, this.passEndedAt + window - performance.now()));
  }

  /**
   * One pass: publish, plan, apply. Never throws: failures land in status, logs and metrics.
   * `checkInOnly`: nothing but the check-in timer asked for it, so when the last pass went well and
   * no node's readiness has changed since, the plan is the last one: the pass only publishes the
   * local node's check-in (docs/performance.md#heartbeats-and-passes).
   */
  async reconcileOnce(checkInOnly = false): Promise<void> {
    const { options, log, metrics, source } = this.deps;
    metrics.reconciles.inc();
    this.status.reconciles++;
    // Where a pass spends its time, at debug level: at scale a join waits for all of it.
    const started = performance.now();
    const took: Record<string, number> = {};
    const lap = (name: string) => (took[name] = Math.round(performance.now() - started - sumOf(took)));
    try {
      // Read before the objects: a change arriving during the pass makes the next one plan.
      const changes = this.clusterChanges;
      const cluster = parseCluster(source.objects(), { topologyLabel: options.topologyLabel, memo: this.parsed });
      this.parsed.settle();
      for (const e of cluster.errors) {
        // Logged and counted once per distinct problem: a bad annotation must not flood the log.
        if (this.reported.has(e.message)) continue;
        this.reported.add(e.message);
        log.warn({ object: e.object, field: e.field, value: e.value }, `dropping object from the mesh: ${e.reason}`);
        metrics.dropped.inc({ kind: e.object.split(' ')[0] ?? 'object' });
      }
      lap('parseMs');
      this.keys.step(this.ownAnnotations());
      if (checkInOnly && !this.keys.busy && (await this.checkInOnly(cluster.nodes, took))) return;
      const cniError = await this.syncCNI(cluster.nodes.find((n) => n.name === options.hostname)?.podCIDRs ?? []);
      const nowSeconds = Math.floor(this.clock() / 1000);
      // Without a monitor nothing tells foreign changes apart, so every pass reads.
      const trustLastWrite = !this.fullReadDue && this.watch !== null;
      this.fullReadDue = false;
      if (!trustLastWrite) this.memory.forget();
      // Only a full pass, or one readDevice asked for, reads WireGuard (docs/performance.md#heartbeats-and-passes),
      // once: configure diffs against that read, or against the last write when the pass trusts it
      // (DataplaneMemory.forDevice). A pass that reads no WireGuard takes the roaming peers (their
      // learned endpoints, their sessions live or not) as the last read saw them, judged when it was
      // taken: it writes against the last write, so a session that started since leaves nothing to undo.
      const readDevice = !trustLastWrite || this.deviceReadDue;
      this.deviceReadDue = false;
      const dump = readDevice ? await this.deps.dataplane.device.dump().catch(() => null) : null;
      if (dump) this.memory.deviceRead(dump);
      const device = dump?.state ?? null;
      // The read's roaming peers (by the last topology's keys), found once: at 20,000 nodes each walk
      // of the read is 19,000 peers, and the discovered endpoints, the roaming rule and the next
      // passes want only these few.
      const roaming = device ? this.roamingSeen(device, nowSeconds) : this.roaming;
      const discovered = this.discoveredEndpoints(roaming?.state ?? null);
      let topology: Topology | null = null;
      let plan: Plan | null = null;
      try {
        const judged = judgeReadiness(this.readiness, cluster.nodes, nowSeconds);
        this.readiness = judged.memory;
        const readyAt = judged.at;
        const ready = cluster.nodes.filter((n) => isNodeReady(n, readyAt));
        ({ topology, plan } = this.planned(cluster, ready, readyAt, { changes, ready: readyKey(ready) }));
      } catch (e) {
        this.lastPlan = null;
        if (!(e instanceof TopologyError)) throw e;
        // Until our own annotations are published and seen, the node is not ready: publish first.
        log.debug({ reason: e.message }, 'local node not ready yet');
      }
      for (const e of topology?.conflicts ?? []) {
        // Like a malformed object: logged and counted once per distinct conflict.
        if (this.reported.has(e.message)) continue;
        this.reported.add(e.message);
        log.warn({ object: e.object, field: e.field, value: e.value }, `conflict: dropping a claim: ${e.reason}`);
        metrics.dropped.inc({ kind: e.object.split(' ')[0] ?? 'object' });
      }
      this.lastDiscovered = discovered;
      lap('planMs');
      this.readyNodes = new Set(topology?.segments.flatMap((s) => s.nodes.map((n) => n.name)));
      // An API server that is away must not stop the dataplane from being kept as planned.
      this.reportMixedAllocation(topology);
      const publishError = await this.publish(plan, topology, discovered, nowSeconds).then(
        () => null,
        (e: unknown) => {
          metrics.errors.inc();
          log.error({ err: (e as Error).message }, 'publishing the local node failed');
          return (e as Error).message;
        },
      );
      if (!topology || !plan) {
        // Nothing written: the read this pass owed (and made for its write) is owed by the next.
        if (!trustLastWrite) this.fullReadDue = true;
        this.finish(false, publishError ?? 'local node not ready yet (waiting for its annotations)');
        return;
      }
      this.leadership.observe(topology);
      this.status.topology = topology;
      if (device) this.roaming = roaming?.of === topology ? roaming : this.roamingSeen(device, nowSeconds);
      const lastPlan = this.status.plan;
      this.status.plan = plan;
      this.relayWatch.observe(plan);
      this.cutOffWatch.observe(plan);
      metrics.nodes.set(topology.segments.reduce((n, s) => n + s.nodes.length, 0));
      metrics.peers.set(topology.peers.length);
      metrics.leader.set(plan.leader ? 1 : 0);

      lap('publishMs');
      // Path health judges the new topology after the write, not before it: at 20,000 nodes that is
      // 19,000 targets a join would wait for, and nothing up to here reads it (publish ran above;
      // publishSwitchedKey, below, does). Told even when the write throws, as every pass.
      let result: Awaited<ReturnType<typeof reconcile>>;
      try {
        result = await reconcile(
          this.deps.dataplane,
          {
            plan: keepRoamingEndpoints(
              await this.rekeyedEndpoints.apply(plan, lastPlan, device, nowSeconds, () =>
                this.deps.dataplane.device.dump().then(
                  (d) => d.state,
                  () => null,
                ),
              ),
              this.roaming?.state ?? null,
              this.roamingKeys(),
              this.roaming?.at ?? nowSeconds,
            ),
            devices: await this.devices(),
            privateKey: this.keys.deviceKey,
            mtu: options.mtu,
          },
          { memory: this.memory },
        );
      } finally {
        this.deps.paths?.planned(topology, device);
      }
      this.status.lastResult = result;
      this.roamingReads.passed(topology, this.roaming?.state ?? null, device !== null);
      metrics.writes.inc(result.writes);
      if (result.writes > 0)
        log.info({ writes: result.writes, wireGuard: summarizePeerChanges(result.wireGuard) }, 'dataplane updated');
      for (const e of result.errors) log.error({ err: e.message }, 'reconcile step failed');
      if (result.errors.length > 0) {
        metrics.errors.inc(result.errors.length);
        this.fullReadDue = true;
      }
      const keyError =
        result.errors.length === 0 ? await this.publishSwitchedKey(plan, topology, discovered, nowSeconds) : null;
      // The pass's one read, as the write left it: the removed peers' series go with them.
      if (device) metrics.observeDevice(this.peersPlanned(device, plan), this.clock() / 1000);
      await this.relayedTraffic.pass(plan.firewall.countRelayed === true, this.deps.dataplane.firewall, log);
      const failures = [
        ...(publishError ? [publishError] : []),
        ...(keyError ? [keyError] : []),
        ...(cniError ? [cniError] : []),
        ...result.errors.map((e) => e.message),
      ];
      lap('applyMs');
      log.debug({ ...took, trustLastWrite, deviceRead: device !== null, writes: result.writes }, 'reconcile pass');
      this.finish(failures.length === 0, failures.join('; ') || null);
      // Only the dataplane's failures count against a leader: the API server has the Lease's own clock.
      this.election.reconciled(result.errors.length === 0, topology);
    } catch (e) {
      this.fullReadDue = true;
      this.lastPlan = null;
      metrics.errors.inc();
      log.error({ err: (e as Error).message }, 'reconcile failed');
      this.finish(false, (e as Error).message);
      this.election.reconciled(false, this.status.topology);
    }
  }

  /**
   * The topology and plan of a pass. A plan's inputs are the parsed cluster, the ready nodes (with
   * the time they are judged at), the leaders and the fixed flags and host facts: with annotation
   * election the leaders follow from the ready nodes, and the objects are the same when no change
   * but a ready node's heartbeat (only last-seen moved) came since. Then the last plan is the plan:
   * the resync pass still reads the machine and applies it, without planning
   * (docs/performance.md#heartbeats-and-passes).
   */
  private planned(
    cluster: ParsedCluster,
    ready: readonly KiloNode[],
    readyAt: number,
    key: { changes: number; ready: string },
  ): { topology: Topology; plan: Plan } {
    const { options } = this.deps;
    const last = this.lastPlan;
    if (last && last.changes === key.changes && last.ready === key.ready && this.election.mode === 'annotation')
      return last;
    const leaders = this.election.leaders(ready, ready.find((n) => n.name === options.hostname) ?? null);
    const topology = topologyOf(cluster, options.hostname, options.mesh, readyAt, leaders);
    const plan = planNode(topology, options.mesh, this.encapsulator, this.planMemo);
    this.status.plans++;
    this.lastPlan = { ...key, topology, plan };
    return this.lastPlan;
  }

  /**
   * The check-in pass when nothing else is due: the last pass went well, nothing asked for a read of
   * the machine, and the same nodes are ready. Then it publishes the check-in and returns true.
   */
  private async checkInOnly(nodes: readonly KiloNode[], took: Record<string, number>): Promise<boolean> {
    const { log, metrics } = this.deps;
    // The last plan stands for the last full pass: every failure or a pass without a plan drops it.
    const last = this.lastPlan;
    if (!this.status.lastReconcileOk || this.fullReadDue || !last || this.election.mode !== 'annotation') return false;
    const nowSeconds = Math.floor(this.clock() / 1000);
    const judged = judgeReadiness(this.readiness, nodes, nowSeconds);
    if (readyKey(nodes.filter((n) => isNodeReady(n, judged.at))) !== last.ready) return false;
    this.readiness = judged.memory;
    const error = await this.publish(last.plan, last.topology, this.lastDiscovered, nowSeconds).then(
      () => null,
      (e: unknown) => {
        metrics.errors.inc();
        log.error({ err: (e as Error).message }, 'publishing the local node failed');
        return (e as Error).message;
      },
    );
    log.debug({ ...took, checkInOnly: true }, 'reconcile pass');
    this.finish(error === null, error);
    return true;
  }

  /** Keeps the CNI conflist's pod subnet equal to the node's; returns the failure, if any. */
  private async syncCNI(podCIDRs: ByFamily<Cidr>): Promise<string | null> {
    const { options, log, metrics } = this.deps;
    if (!options.cniPath || podCIDRs.length === 0) return null;
    // Both families only in a dual-stack mesh: a one-family mesh's conflist is as before.
    const podCIDR = options.mesh.subnets ? podCIDRs : podCIDRs[0]!;
    try {
      const r = await syncCNIConfig(options.cniPath, podCIDR);
      if (r.status === 'absent')
        this.once(`cni-absent:${options.cniPath}`, () =>
          log.info({ path: options.cniPath }, 'no CNI config file: leaving CNI config alone'),
        );
      if (r.status === 'updated')
        log.info({ path: options.cniPath, from: r.from, to: r.to }, 'set the pod subnet in the CNI config');
      return null;
    } catch (e) {
      metrics.errors.inc();
      const message = (e as Error).message;
      this.once(message, () => log.warn({ err: message }, 'updating the CNI config failed'));
      return message;
    }
  }

  private once(key: string, f: () => void): void {
    if (this.reported.has(key)) return;
    this.reported.add(key);
    f();
  }

  private finish(ok: boolean, error: string | null): void {
    this.status.lastReconcileAt = this.clock();
    this.status.lastReconcileOk = ok;
    this.status.lastError = error;
  }

  /** A cluster whose agents allocate WireGuard IPs by different rules is said once per mix of rules. */
  private reportMixedAllocation(topology: Topology | null): void {
    // Its inputs are the Nodes' announcements and the ready set: no counted change (a heartbeat is not
    // one) and the same topology leave both as they were, and 20,000 Nodes are not walked again.
    const seen = this.allocationsChecked;
    if (seen && seen.changes === this.clusterChanges && seen.topology === topology) return;
    this.allocationsChecked = { changes: this.clusterChanges, topology };
    const mixed = mixedAllocation(this.deps.source.objects(), this.readyNodes);
    if (mixed) this.once(`wireguard-ip-allocation:${mixed.key}`, () => this.deps.log.warn({}, mixed.message));
  }

  /** The local Node's annotations as the source holds them ({} while it is absent). */
  private ownAnnotations(): Readonly<Record<string, string>> {
    const name = this.deps.options.hostname;
    return (
      this.deps.source.objects().find((o) => o.kind === 'Node' && o.metadata?.name === name)?.metadata?.annotations ??
      {}
    );
  }

  /**
   * A pass that applied a switched key publishes it at once, after the write: peers must not learn
   * it before the device holds it (docs/key-rotation.md#the-order). Returns the failure, if any: the
   * next passes publish it then.
   */
  private async publishSwitchedKey(
    plan: Plan,
    topology: Topology | null,
    discovered: Map<string, Endpoint>,
    now: number,
  ): Promise<string | null> {
    if (!this.keys.applied()) return null;
    this.armRotation();
    // Before the peers can learn the key: its handshakes fail now, so that WireGuard leaves the
    // next ones to the peers (handshake-primer.ts); both sides at once cost 5 s of traffic.
    if (topology)
      await this.deps.keyRotation
        ?.startHandshakes?.(handshakeAddresses(plan, topology))
        .catch((e: unknown) =>
          this.deps.log.warn({ err: (e as Error).message }, 'key rotation: starting the handshakes failed'),
        );
    return this.publish(plan, topology, discovered, now).then(
      () => null,
      (e: unknown) => {
        this.deps.metrics.errors.inc();
        this.deps.log.error({ err: (e as Error).message }, 'publishing the rotated key failed');
        return (e as Error).message;
      },
    );
  }

  private async publish(
    plan: Plan | null,
    topology: Topology | null,
    discovered: Map<string, Endpoint>,
    now: number,
  ): Promise<void> {
    const { source, options, facts } = this.deps;
    const self = source.objects().find((o) => o.kind === 'Node' && o.metadata?.name === options.hostname);
    if (!self) throw new Error(`node ${JSON.stringify(options.hostname)} does not exist in the cluster`);
    const current = self.metadata?.annotations ?? {};
    const patch = annotationPatch(current, {
      publicKey: this.keys.publicKey,
      nextKey: this.keys.nextPublicKey,
      ...(this.keys.acknowledged !== undefined ? { keyRotated: this.keys.acknowledged } : {}),
      endpoint: facts.endpointIP ? formatEndpoint({ ip: facts.endpointIP, dns: null, port: options.mesh.port }) : null,
      internalIP: facts.internalIP,
      wireGuardIP: publishedWireGuardIP(options.mesh, plan, topology, current[Annotation.wireGuardIP]),
      ...(lostIPv6Pods(self.spec) ? { lostIPv6Pods: true } : {}),
      ...(facts.ipv6InternalIP !== undefined
        ? {
            ipv6: {
              internalIP: facts.ipv6InternalIP,
              endpoint: facts.ipv6EndpointIP
                ? formatEndpoint({ ip: facts.ipv6EndpointIP, dns: null, port: options.mesh.port })
                : null,
              wireGuardIP: publishedWireGuardIPv6(options.mesh, plan, topology, current[Annotation.wireGuardIPv6]),
            },
          }
        : {}),
      granularity: options.mesh.granularity,
      ...(options.meshFlags !== undefined ? { meshFlags: options.meshFlags } : {}),
      discoveredEndpoints: discovered,
      now,
      ciliumInternalIP: await this.encapsulation.ownAddress(),
      leaderHealth: this.election.report(),
      ...(this.deps.paths
        ? {
            pathHealth: this.deps.paths.publishable(current[Annotation.pathHealth]),
            unreachable: formatUnreachable(this.deps.paths.unreachablePeers(publishedUnreachable(current))),
          }
        : {}),
    });
    if (patch) await source.patchNodeAnnotations(options.hostname, patch);
    // The announcement is out: the next pass may switch the device to the key.
    if (this.keys.publishedNext()) this.schedule(0);
  }

  /** Endpoints WireGuard learned for roaming peers (those that keep the tunnel alive from behind NAT). */
  private discoveredEndpoints(state: WireGuardState | null): Map<string, Endpoint> {
    const out = new Map<string, Endpoint>();
    const plan = this.status.plan;
    if (!plan) return out;
    const roaming = this.roamingKeys();
    for (const p of state?.peers ?? []) {
      if (!roaming.has(p.publicKey) || !p.endpoint || p.latestHandshake === 0) continue;
      const e = parseEndpoint(p.endpoint);
      if (e?.ip) out.set(p.publicKey, e);
    }
    return out;
  }

  /** The keys of the roaming peers of the last topology (kept with it: a pass asks up to three times). */
  private roamingKeys(): ReadonlySet<string> {
    const t = this.status.topology;
    if (!t) return new Set();
    if (this.roamingOf?.topology === t) return this.roamingOf.keys;
    const keys = new Set([
      ...t.segments.filter((s) => s.leader.persistentKeepalive > 0).map((s) => s.leader.key!),
      ...t.peers.filter((p) => p.persistentKeepalive > 0).map((p) => p.publicKey),
    ]);
    this.roamingOf = { topology: t, keys };
    return keys;
  }

  /** The roaming peers of a read (a handful of its thousands of peers), for the passes until the next. */
  private roamingSeen(device: WireGuardState, at: number): { state: WireGuardState; at: number; of: Topology | null } {
    const keys = this.roamingKeys();
    const of = this.status.topology;
    return { state: { ...device, peers: device.peers.filter((p) => keys.has(p.publicKey)) }, at, of };
  }

  /** The peers of a read that the plan keeps (the write removed the others); new ones appear at the next read. */
  private peersPlanned(device: WireGuardState, plan: Plan): WireGuardState {
    // The plan's keys, kept with it: a resync reuses the last plan, and 19,000 keys are a set each time.
    if (this.plannedKeys?.plan !== plan) this.plannedKeys = { plan, keys: new Set(plan.peers.map((p) => p.publicKey)) };
    const keys = this.plannedKeys.keys;
    return { ...device, peers: device.peers.filter((p) => keys.has(p.publicKey)) };
  }

  private async devices(): Promise<DeviceNames> {
    const kilo = this.deps.options.interfaceName;
    const { tunnel, private: cni } = await this.encapsulation.devices();
    // Beside a CNI that names it (flannel.1), location mates are reached over its device.
    if (cni) return { kilo, private: cni, tunnel };
    const ip = this.deps.facts.internalIP?.ip ?? null;
    if (ip && this.privateIface?.ip !== ip.text) {
      this.privateIface = { ip: ip.text, name: interfaceHolding(await this.deps.host.addresses(), ip) };
    }
    return { kilo, private: ip ? (this.privateIface?.name ?? null) : null, tunnel };
  }
}

function sumOf(took: Record<string, number>): number {
  let sum = 0;
  for (const v of Object.values(took)) sum += v;
  return sum;
}

/** The names of the ready nodes, as one comparable value. */
function readyKey(ready: readonly KiloNode[]): string {
  return ready
    .map((n) => n.name)
    .sort()
    .join('\n');
}
