import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { describeError, statusCodeOf } from '../backend/kubernetes/errors.js';
import { KubernetesSource } from '../backend/kubernetes/source.js';
import { peerGroup, peerPlural, peerVersion } from '../backend/kubernetes/source.js';
import type { ReflectorTimings } from '../backend/kubernetes/reflector.js';
import type { Logger } from '../backend/source.js';
import type { Links, RoutingTables, WireGuardDevice } from '../dataplane/types.js';
import { topologyOf } from '../mesh/compute.js';
import type { MeshOptions } from '../mesh/options.js';
import type { PlanPeer, PlanRoute } from '../mesh/types.js';
import { UsageError } from '../model/errors.js';
import { parseCluster, type ParsedCluster } from '../model/parse.js';
import { isNodeReady, judgeReadiness, type ReadinessMemory } from '../model/ready.js';
import { Cidr } from '../net/cidr.js';
import { publicKeyOf } from '../wireguard/keys.js';
import { meshOptionsFrom, resolveGranularity, type MeshFlagValues } from './flags.js';
import { announcedFlags, withAnnounced } from './announced-flags.js';
import { peerConfig } from './showconf-conf.js';

/**
 * `kgctl connect`: this machine joins the mesh as a Peer, as Kilo's does. It registers the Peer
 * (unless it exists), configures a WireGuard interface with the mesh as `showconf peer` prints it
 * and routes the mesh's allowed IPs into it, follows the cluster until interrupted, and then
 * removes what it added (the interface, its routes, and a Peer it registered), unless
 * --clean-up=false.
 */

export interface ConnectConfig {
  peers: PlanPeer[];
  routes: PlanRoute[];
}

/**
 * What the Peer `name` configures, computed from any ready node (a Peer's view does not depend
 * on it): the first by name, whose segment also carries `extra` (e.g. the service CIDR), as Kilo
 * adds them to that node's allowed location IPs. Every allowed IP is routed into the interface.
 */
export function connectConfig(
  cluster: ParsedCluster,
  name: string,
  options: MeshOptions,
  extra: readonly Cidr[],
  now: number,
): ConnectConfig {
  const viewer = cluster.nodes
    .filter((n) => isNodeReady(n, now))
    .map((n) => n.name)
    .sort()[0];
  if (!viewer) throw new UsageError('no ready node in the cluster: there is nothing to connect to');
  const t = topologyOf(cluster, viewer, options, now);
  const ini = peerConfig(t, name);
  const first = t.segments.findIndex((s) => s.nodes.some((n) => n.name === viewer));
  const peers: PlanPeer[] = ini.peers.map((p, i) => ({
    kind: i < t.segments.length ? 'segment' : 'peer',
    names:
      i < t.segments.length
        ? t.segments[i]!.nodes.map((n) => n.name)
        : [p.comment?.replace(/ \(Peer\)$/, '') ?? p.publicKey],
    publicKey: p.publicKey,
    endpoint: p.endpoint ?? null,
    allowedIPs: i === first ? [...new Set([...p.allowedIPs, ...extra.map((c) => c.networkText)])] : p.allowedIPs,
    persistentKeepalive: p.persistentKeepalive ?? 0,
    presharedKey: p.presharedKey ?? null,
  }));
  const routes: PlanRoute[] = [];
  const seen = new Set<string>();
  for (const p of peers) {
    for (const dst of p.allowedIPs) {
      if (seen.has(dst)) continue;
      seen.add(dst);
      routes.push({ dst, gw: null, dev: 'kilo', src: null, table: 'main', onlink: false });
    }
  }
  return { peers, routes };
}

export interface ConnectOptions {
  name: string;
  /** The Peer's own address: its allowed IP in the cluster and the interface's address. */
  allowedIP: Cidr;
  /** More of the cluster to reach through the mesh (e.g. the service CIDR). */
  extraAllowedIPs: Cidr[];
  persistentKeepalive: number;
  interfaceName: string;
  mtu: number;
  resyncPeriodMs: number;
  cleanUp: boolean;
  /** explicitFlags: those the user gave, which the agents' announcements do not override. */
  mesh: MeshFlagValues & { explicitFlags?: ReadonlySet<string> };
}

export interface ConnectDeps {
  kubeConfig: KubeConfig;
  dataplane: { device: WireGuardDevice; links: Links; routes: RoutingTables };
  privateKey: string;
  log: Logger;
  options: ConnectOptions;
  timings?: Partial<ReflectorTimings>;
}

/** The running connection; `start()` then, on a signal, `stop()`. */
export class Connection {
  /** True when this process registered the Peer (and so removes it on stop with clean-up). */
  createdPeer = false;
  lastError: string | null = null;
  syncs = 0;
  private readonly source: KubernetesSource;
  private readonly custom: CustomObjectsApi;
  private readonly publicKey: string;
  private timer: NodeJS.Timeout | null = null;
  private pending: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;
  /** Check-ins seen across passes: readiness stays as it froze while they resume after a silence. */
  private readiness: ReadinessMemory | null = null;

  constructor(private readonly deps: ConnectDeps) {
    this.publicKey = publicKeyOf(deps.privateKey);
    this.custom = deps.kubeConfig.makeApiClient(CustomObjectsApi);
    this.source = new KubernetesSource({
      kubeConfig: deps.kubeConfig,
      logger: deps.log,
      ...(deps.timings ? { timings: deps.timings } : {}),
    });
  }

  async start(): Promise<void> {
    const { dataplane, options, log } = this.deps;
    await this.ensurePeer();
    await dataplane.device.ensure();
    await dataplane.links.reconcile(options.interfaceName, {
      address: options.allowedIP.toString(),
      up: true,
      mtu: options.mtu,
    });
    this.source.onChange(() => this.schedule());
    await this.source.start();
    log.info({ peer: options.name, interface: options.interfaceName }, 'connected to the cluster');
    this.timer = setInterval(() => this.schedule(), options.resyncPeriodMs);
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    // A wireguard-go signalled with kgctl connect is not restarted (as in Agent.stop).
    const detached = this.deps.dataplane.device.detach();
    if (this.timer) clearInterval(this.timer);
    if (this.pending) clearTimeout(this.pending);
    await this.running;
    await detached;
    await this.source.stop();
    const { dataplane, options, log } = this.deps;
    if (!options.cleanUp) return;
    const attempt = async (what: string, f: () => Promise<unknown>) =>
      f().catch((e: unknown) => log.error({ err: (e as Error).message }, `clean-up of ${what} failed`));
    await attempt('routes', () => dataplane.routes.cleanup());
    await attempt('the WireGuard interface', () => dataplane.device.destroy());
    if (this.createdPeer) {
      await attempt(`Peer ${options.name}`, async () => {
        await this.custom.deleteClusterCustomObject({
          group: peerGroup,
          version: peerVersion,
          plural: peerPlural,
          name: options.name,
        });
        log.info({ peer: options.name }, 'removed the Peer');
      });
    }
  }

  /** Registers the Peer for this machine's key, or checks that the existing one carries it. */
  private async ensurePeer(): Promise<void> {
    const { options, log } = this.deps;
    const ref = { group: peerGroup, version: peerVersion, plural: peerPlural, name: options.name };
    let existing: { spec?: { publicKey?: string } } | null = null;
    try {
      existing = (await this.custom.getClusterCustomObject(ref)) as { spec?: { publicKey?: string } };
    } catch (e) {
      if (statusCodeOf(e) !== 404)
        throw new UsageError(`cannot read Peer ${JSON.stringify(options.name)}: ${describeError(e)}`);
    }
    if (existing) {
      const key = existing.spec?.publicKey;
      if (key !== this.publicKey) {
        // Overwriting someone's key would cut them off; using theirs would never handshake.
        throw new UsageError(
          `Peer ${JSON.stringify(options.name)} exists with spec.publicKey ${JSON.stringify(key ?? null)}, not this machine's ${this.publicKey}: pass --private-key with its key, or another name`,
        );
      }
      log.info({ peer: options.name }, 'using the existing Peer');
      return;
    }
    const spec: Record<string, unknown> = { allowedIPs: [options.allowedIP.networkText], publicKey: this.publicKey };
    if (options.persistentKeepalive > 0) spec['persistentKeepalive'] = options.persistentKeepalive;
    try {
      await this.custom.createClusterCustomObject({
        group: peerGroup,
        version: peerVersion,
        plural: peerPlural,
        body: { apiVersion: `${peerGroup}/${peerVersion}`, kind: 'Peer', metadata: { name: options.name }, spec },
      });
    } catch (e) {
      throw new UsageError(`cannot create Peer ${JSON.stringify(options.name)}: ${describeError(e)}`);
    }
    this.createdPeer = true;
    log.info({ peer: options.name, allowedIPs: spec['allowedIPs'] }, 'registered the Peer');
  }

  private schedule(delayMs = 100): void {
    if (this.stopped || this.pending) return;
    this.pending = setTimeout(() => {
      this.pending = null;
      const previous = this.running ?? Promise.resolve();
      this.running = previous.then(() => this.sync()).finally(() => (this.running = null));
    }, delayMs);
  }

  private readonly warned = new Set<string>();
  private warnOnce(line: string): void {
    if (this.warned.has(line)) return;
    this.warned.add(line);
    this.deps.log.warn({}, line);
  }

  /** One pass: the mesh as this Peer sees it onto the interface and the routes. Never throws. */
  async sync(): Promise<void> {
    const { options, dataplane, log } = this.deps;
    this.syncs++;
    try {
      const objects = this.source.objects();
      let cluster = parseCluster(objects, { topologyLabel: options.mesh.topologyLabel });
      const judged = judgeReadiness(this.readiness, cluster.nodes, Math.floor(Date.now() / 1000));
      this.readiness = judged.memory;
      const now = judged.at;
      const ready = cluster.nodes.filter((n) => isNodeReady(n, now)).map((n) => n.name);
      const viewer = ready.sort()[0];
      // Plan with the flags the agents run with (kilo.squat.ai/mesh-flags) unless the user gave them.
      const announced = announcedFlags(objects, new Set(ready), undefined, (line) => this.warnOnce(line));
      const flags = announced
        ? withAnnounced(options.mesh, announced.flags, options.mesh.explicitFlags ?? new Set())
        : options.mesh;
      if (flags.topologyLabel !== options.mesh.topologyLabel)
        cluster = parseCluster(objects, { topologyLabel: flags.topologyLabel });
      const mesh = meshOptionsFrom(flags, resolveGranularity(flags.meshGranularity, cluster.nodes, viewer));
      const conf = connectConfig(cluster, options.name, mesh, options.extraAllowedIPs, now);
      const changes = await dataplane.device.configure({
        privateKey: this.deps.privateKey,
        listenPort: mesh.port,
        peers: conf.peers,
      });
      const routes = await dataplane.routes.reconcile(conf.routes, [], {
        kilo: options.interfaceName,
        private: null,
        tunnel: null,
      });
      const writes = changes.added.length + changes.removed.length + changes.updated.length + routes.writes;
      if (writes > 0) log.info({ wireGuard: changes, routes: routes.writes }, 'mesh configuration updated');
      this.lastError = null;
    } catch (e) {
      this.lastError = (e as Error).message;
      log.error({ err: this.lastError }, 'sync failed');
    }
  }
}
