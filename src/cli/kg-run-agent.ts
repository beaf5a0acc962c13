import { hostExec } from '../dataplane/exec.js';
import { LinuxHost } from '../dataplane/host/linux.js';
import { startRoutingMonitor } from '../dataplane/monitor.js';
import { kiloRouteProtocol, kiloRulePriority } from '../dataplane/routes/constants.js';
import { UsageError } from '../model/errors.js';
import { loadOrCreateKey } from '../wireguard/keys.js';
import { keyWrittenAt, replaceKeyFile } from '../wireguard/key-file.js';
import { Agent } from '../agent/agent.js';
import { createAgentServer, parseListen } from '../agent/http.js';
import { linuxDataplane } from '../agent/linux-dataplane.js';
import { encapsulationOf } from '../encapsulation/index.js';
import { createLogger } from '../agent/log.js';
import { AgentMetrics } from '../agent/metrics.js';
import { discoverHost, resolveMTU } from '../agent/startup.js';
import { electionTiming, parseMTU, requireHostname } from './agent-flags.js';
import type { RunFlagValues } from './kg-run.js';
import { LeaseElection } from '../election/leader-election.js';
import { ElectionMetrics } from '../election/metrics.js';
import { meshOptionsFrom } from './flags.js';
import { formatMeshFlags } from '../model/mesh-flags.js';
import { PathHealth } from '../agent/path-health.js';
import { PathMetrics } from '../agent/health-metrics.js';
import { Prober } from '../agent/health-prober.js';
import { primeHandshakes } from '../agent/handshake-primer.js';
import { chooseFirewall, FirewallUnavailableError, type FirewallChoice } from '../dataplane/nftables/choice.js';

/** The body of `kg run`: start the agent and run it until SIGTERM or SIGINT. */
export async function runAgent(flags: RunFlagValues): Promise<void> {
  const hostname = requireHostname(flags);
  const listen = parseListen(flags.listen);
  if (!listen) throw new UsageError(`--listen: not host:port: ${JSON.stringify(flags.listen)}`);
  const mtu = parseMTU(flags.mtu);
  const log = createLogger(flags.logLevel);
  const exec = hostExec();
  const host = new LinuxHost(exec);
  const mesh = {
    ...meshOptionsFrom(flags, flags.meshGranularity === 'auto' ? 'location' : flags.meshGranularity),
    privateKeyPath: flags.keyFile,
  };
  // Only for the log line: the agent makes the same choice from the same options.
  const encapsulation = encapsulationOf(mesh);
  const privateKey = loadOrCreateKey(flags.keyFile);
  const facts = await discoverHost(host, {
    interfaceName: flags.interface,
    subnet: mesh.subnets ?? mesh.subnet,
    internalCIDRs: flags.internalCidr,
    prioritisePrivate: flags.prioritisePrivateAddresses,
  });
  log.info(
    {
      internalIP: facts.internalIP?.toString() ?? null,
      endpoint: facts.endpointIP?.text ?? null,
      encapsulation: encapsulation.encapsulator.name,
      encapsulationAddress: (await encapsulation.device.ownAddress(host))?.text ?? null,
    },
    'discovered host addresses',
  );
  // Chosen before anything is written: a host that cannot run the backend is told once, here.
  let firewall: FirewallChoice;
  try {
    firewall = await chooseFirewall(exec, flags.firewall);
  } catch (e) {
    if (!(e instanceof FirewallUnavailableError)) throw e;
    // Said once; the agent then waits to be stopped, writing nothing, instead of exiting into a
    // restart that would fail the same way.
    log.error({ err: e.message }, 'cannot start: the firewall backend cannot run on this host');
    process.exitCode = 1;
    await new Promise<void>((resolve) => {
      process.once('SIGTERM', () => resolve());
      process.once('SIGINT', () => resolve());
    });
    return;
  }
  log.info({ firewall: firewall.backend, reason: firewall.reason }, 'firewall backend');
  const metrics = new AgentMetrics({ perPeer: flags.metricsPerPeer });
  // Loaded here: the client takes seconds to import, and kg apply/webhook/lab never need it.
  const { KubernetesSource, kubeConfigFrom } = await import('../backend/kubernetes/index.js');
  const source = new KubernetesSource({
    kubeConfig: kubeConfigFrom(flags),
    logger: log,
    nodeLabels: [flags.topologyLabel],
  });
  const electionMetrics = new ElectionMetrics(metrics.registry);
  // One prober for the per-pair health and the election's probes (health-prober.ts).
  const prober = new Prober((address) => host.ping(address));
  const paths = new PathHealth({
    prober,
    mesh,
    log,
    observer: new PathMetrics(metrics.registry),
    onChange: () => agent.schedule(undefined, true),
  });
  let election: LeaseElection | undefined;
  if (flags.leaderElection === 'lease') {
    const { KubernetesLeases } = await import('../backend/kubernetes/leases.js');
    election = new LeaseElection({
      api: new KubernetesLeases({ kubeConfig: kubeConfigFrom(flags), namespace: flags.namespace, logger: log }),
      host: prober.host(host),
      identity: hostname,
      interfaceName: flags.interface,
      timing: electionTiming(flags),
      log,
      metrics: electionMetrics,
    });
  }
  const dataplane = linuxDataplane(exec, {
    interfaceName: flags.interface,
    createInterface: flags.createInterface,
    implementation: flags.wireguard,
    log: (line) => log.info({}, line),
    debug: (line) => log.debug({}, line),
    firewall: firewall.backend,
    nftablesInUse: firewall.nftablesInUse,
    // A restarted wireguard-go comes back without addresses and routes: read and reconcile.
    onRestart: () => agent.resync(),
  });
  const agent: Agent = new Agent({
    source,
    dataplane,
    host,
    privateKey,
    facts,
    log,
    metrics,
    ...(election ? { election } : {}),
    paths,
    leaderTransition: (location) => electionMetrics.transitions.inc({ location }),
    keyRotation: {
      periodMs: flags.keyRotationPeriod,
      keyCreatedAtMs: keyWrittenAt(flags.keyFile),
      persist: (key) => replaceKeyFile(flags.keyFile, key),
      startHandshakes: primeHandshakes,
    },
    watchRouting: (onEvent) =>
      startRoutingMonitor(
        exec,
        { protocol: kiloRouteProtocol, priority: kiloRulePriority, interfaces: [flags.interface] },
        onEvent,
      ),
    options: {
      hostname,
      mesh,
      interfaceName: flags.interface,
      topologyLabel: flags.topologyLabel,
      resyncPeriodMs: flags.resyncPeriod,
      mtu: await resolveMTU(host, mtu),
      cleanUp: flags.cleanUp,
      cleanUpInterface: flags.cleanUpInterface,
      coalesceMs: 100,
      staleAfterMs: Math.max(3 * flags.resyncPeriod, 120_000),
      cniPath: flags.cni ? flags.cniPath : null,
      meshFlags: formatMeshFlags({
        ...flags,
        subnet: mesh.subnets ?? mesh.subnet,
        compatibility: flags.compatibility ?? '',
        routeHostTraffic: mesh.routeHostTraffic,
        firewall: firewall.backend,
      }),
    },
  });
  const server = createAgentServer({
    agent,
    source,
    metrics,
    staleAfterMs: Math.max(3 * flags.resyncPeriod, 120_000),
    paths,
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, resolve);
  });
  await runUntilSignal(agent, () => server.close(), log);
}

/** Runs the agent until SIGTERM or SIGINT, then stops it (cleaning up per --clean-up). */
export async function runUntilSignal(
  agent: { start(): Promise<void>; stop(): Promise<void> },
  close: () => void,
  log: { info(o: object, m: string): void },
): Promise<void> {
  let stopping: Promise<void> | null = null;
  const done = new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      if (stopping) return;
      log.info({ signal }, 'stopping');
      stopping = agent.stop().finally(() => {
        close();
        resolve();
      });
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  await agent.start();
  await done;
}
