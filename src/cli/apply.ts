import { Command } from 'commander';
import { FileSource } from '../backend/file-source.js';
import { hostExec } from '../dataplane/exec.js';
import { ReadAhead } from '../dataplane/read-ahead.js';
import {
  cleanUp,
  nextTurn,
  partialOf,
  reconcile,
  type Dataplane,
  type ReconcileResult,
} from '../dataplane/reconcile.js';
import type { Host, HostAddress } from '../host/host.js';
import { LinuxHost } from '../dataplane/host/linux.js';
import { summarizePeerChanges } from '../dataplane/log-summary.js';
import { topologyOf } from '../mesh/compute.js';
import { planNode } from '../mesh/plan.js';
import { parseCluster } from '../model/parse.js';
import { snapshotNow } from '../model/ready.js';
import { UsageError } from '../model/errors.js';
import { defaultKeyPath, loadOrCreateKey } from '../wireguard/keys.js';
import { linuxDataplane, type LinuxDataplaneOptions } from '../agent/linux-dataplane.js';
import { encapsulationOf, type EncapsulationDevices, type EncapsulationDevice } from '../encapsulation/index.js';
import { createLogger } from '../agent/log.js';
import { logs } from '../agent/log-levels.js';
import { interfaceHolding } from '../agent/discovery.js';
import { resolveMTU } from '../agent/startup.js';
import { addAgentFlags, parseMTU, requireHostname, type AgentFlagValues } from './agent-flags.js';
import { meshOptionsFrom, nowOption, resolveGranularity } from './flags.js';
import { chooseFirewall, type FirewallChoice, type FirewallFlag } from '../dataplane/nftables/choice.js';

interface ApplyFlags extends AgentFlagValues {
  cluster?: string;
  watch: boolean;
  keyFile: string;
  now?: number;
}

/**
 * The host kg apply writes to: this one, or (the build's training of kg's code cache,
 * kg-training.ts) an in-memory one.
 */
export interface ApplyHost {
  host: Host;
  dataplane: (o: LinuxDataplaneOptions) => Dataplane;
  /** Chooses the firewall backend (--firewall); absent: the flag's, iptables for auto (an in-memory host). */
  firewall?: (flag: FirewallFlag) => Promise<FirewallChoice>;
  /**
   * Ends the process once a one-shot apply is done (this host's: at once); absent, it ends when
   * Node's event loop does (the build's training runs kg apply in its own process).
   */
  exit?: () => void;
}

function thisHost(): ApplyHost {
  const exec = hostExec();
  return {
    host: new LinuxHost(exec),
    dataplane: (o) => linuxDataplane(exec, o),
    firewall: (flag) => chooseFirewall(exec, flag),
    // Not after V8 has finished the collection it began on its own threads: at 5,000 nodes the
    // heap reaches its limit during the pass, and Node's exit waited ~10-15 ms for a mark-compact
    // whose memory the process gives back anyway (docs/performance.md#kg-apply-unchanged-at-5000-nodes-issue-37-s6).
    exit: () => process.exit(),
  };
}

/**
 * `kg apply`: the plan of one node from a snapshot file, applied to this machine: the dataplane
 * without Kubernetes. The snapshot is the truth: nothing is detected or published.
 */
export function applyCommand(hostOf: () => ApplyHost = thisHost): Command {
  const cmd = new Command('apply')
    .description('apply the plan of --hostname from a cluster snapshot to this machine, once or --watch the file')
    .option('--cluster <file>', 'cluster snapshot (Kubernetes List or multi-document YAML)')
    .option('--watch', 'keep applying whenever the file changes, until SIGTERM/SIGINT', false)
    .option('--key-file <path>', 'where the WireGuard private key is kept', defaultKeyPath);
  addAgentFlags(cmd).addOption(nowOption());
  return cmd.action(async (flags: ApplyFlags) => {
    const hostname = requireHostname(flags);
    if (!flags.cluster) throw new UsageError('--cluster FILE is required');
    // Once, each line written as it is made: the process may end right after the last (`exit`).
    const log = createLogger(flags.logLevel, { sync: !flags.watch });
    const { host, dataplane: dataplaneOf, firewall: chooseOn, exit } = hostOf();
    const privateKey = loadOrCreateKey(flags.keyFile);
    // The host's addresses are read while the firewall backend is chosen (two commands), not after.
    let addressesAhead: Promise<HostAddress[]> | null = host.addresses();
    addressesAhead.catch(() => {});
    // Chosen before anything is written: a host that cannot run the backend fails here, in one line.
    const firewall: FirewallChoice = chooseOn
      ? await chooseOn(flags.firewall)
      : { backend: flags.firewall === 'nftables' ? 'nftables' : 'iptables', reason: 'given', nftablesInUse: false };
    // At debug: a pass's first lines are the user's errors, if any (the agent says it at info).
    if (logs(flags.logLevel, 'debug'))
      log.debug({ firewall: firewall.backend, reason: firewall.reason }, 'firewall backend');
    // A wireguard-go restarted after a crash gets its peers back, but its new interface has no
    // address or routes: with --watch that calls for a reconcile now, not at the next file change.
    let reapply = () => {};
    // What the interface's creation ahead of the plan says, and the first pass's dataplane lines, are
    // said once that pass has written: one that fails before (an error of the user's, in one line)
    // says nothing of what it undid.
    let held: string[] | null = null;
    const dataplane = dataplaneOf({
      interfaceName: flags.interface,
      createInterface: flags.createInterface,
      implementation: flags.wireguard,
      // Lines no one reads are not made (a first apply's would describe every new peer).
      ...(logs(flags.logLevel, 'info') ? { log: (l: string) => (held ? held.push(l) : log.info({}, l)) } : {}),
      ...(logs(flags.logLevel, 'debug') ? { debug: (l: string) => log.debug({}, l) } : {}),
      onRestart: () => reapply(),
      firewall: firewall.backend,
      nftablesInUse: firewall.nftablesInUse,
    });
    const mtuFlag = parseMTU(flags.mtu);
    // Measured once, after the first plan: a node missing from the snapshot is the first thing to say.
    let mtu: number | null | undefined;
    let encapsulation: EncapsulationDevice | undefined;
    let devices: EncapsulationDevices | undefined;
    // The machine is read while the snapshot is parsed and planned, for the first pass (a later one
    // of --watch reads anew): the dataplane's reads by the layer that hands them to its reconcile,
    // the host's here. A new link with no address changes neither which interface holds the
    // internal IP nor the default route. The MTU's error, if any, is still said after the plan's.
    let ahead: ReadAhead | null = new ReadAhead(dataplane, flags.interface);
    ahead.start();
    let mtuAhead: Promise<number | null> | null = resolveMTU(host, mtuFlag);
    mtuAhead.catch(() => {});
    const source = new FileSource(flags.cluster, { watch: flags.watch, logger: log });
    await source.start();
    // Once the snapshot names this node, the WireGuard interface is created while it is parsed and
    // planned: its commands run in other processes, each turn of the event loop between the steps of
    // the plan takes them one further. A node the snapshot lacks (a mistyped --hostname) touches
    // nothing; a pass that fails before its reconcile removes the interface created for it.
    if (source.objects().some((o) => o.kind === 'Node' && o.metadata?.name === hostname)) {
      held = [];
      void ahead.ensure();
    }
    const undo = async () => {
      held ??= [];
      await ahead?.undo();
      held = null;
    };
    await nextTurn();

    const applyOnce = async (): Promise<ReconcileResult> => {
      // The reads taken at the start are the first pass's: a later one (--watch) reads anew.
      const [addressesRead, mtuRead] = [addressesAhead, mtuAhead];
      [addressesAhead, mtuAhead] = [null, null];
      const readAhead = ahead;
      const cluster = parseCluster(source.objects(), { topologyLabel: flags.topologyLabel });
      await nextTurn();
      for (const e of cluster.errors)
        log.warn({ object: e.object, field: e.field, value: e.value }, `dropping object from the mesh: ${e.reason}`);
      const granularity = resolveGranularity(flags.meshGranularity, cluster.nodes, hostname);
      const options = { ...meshOptionsFrom(flags, granularity), privateKeyPath: flags.keyFile };
      // One choice of encapsulation: its pure part plans, its device part sets the devices up.
      const chosen = encapsulationOf(options);
      const topology = topologyOf(cluster, hostname, options, flags.now ?? snapshotNow(cluster.nodes));
      const plan = planNode(topology, options, chosen.encapsulator);
      await nextTurn();
      const internalIP = cluster.nodes.find((n) => n.name === hostname)?.internalIPs[0]?.ip ?? null;
      mtu ??= await (mtuRead ?? resolveMTU(host, mtuFlag));
      encapsulation = chosen.device;
      devices ??= await encapsulation.setUp(host);
      const privateInterface =
        devices.private ??
        (internalIP ? interfaceHolding(await (addressesRead ?? host.addresses()), internalIP) : null);
      if (internalIP && !privateInterface)
        log.warn(
          { node: hostname, internalIP: internalIP.text },
          'no interface holds the internal IP: routes over the private network cannot be installed',
        );
      // Every pass reads the machine: nothing is remembered from one to the next.
      let result: ReconcileResult;
      try {
        result = await reconcile(
          dataplane,
          {
            plan,
            privateKey,
            mtu,
            devices: { kilo: flags.interface, private: privateInterface, tunnel: devices.tunnel },
          },
          { once: true, ...(readAhead ? { ahead: readAhead } : {}) },
        );
      } finally {
        // Said in order once written: the logger's first line loads pino (docs/performance.md#lazy-loading).
        for (const l of held ?? []) log.info({}, l);
        held = null;
      }
      ahead = null;
      log.info(
        {
          node: hostname,
          granularity,
          writes: result.writes,
          wireGuard: summarizePeerChanges(result.wireGuard),
          routes: result.routes.writes,
          firewall: result.firewall.writes,
          links: result.links.writes,
        },
        'applied',
      );
      for (const e of result.errors) {
        log.error({ err: e.message }, 'apply step failed');
        // The summary shows a few failures; each object that failed also gets a line of its own.
        for (const f of partialOf(e)?.failures ?? []) log.error({ object: f.object, err: f.message }, 'not applied');
      }
      return result;
    };

    if (!flags.watch) {
      const result = await applyOnce().catch(async (e: unknown) => {
        await undo();
        throw e;
      });
      await source.stop();
      if (result.errors.length > 0) process.exitCode = 1;
      // Everything awaited is done: the writes, the reads, the log lines.
      exit?.();
      return;
    }
    let chain: Promise<unknown> = applyOnce().catch(async (e: Error) => {
      await undo();
      log.error({ err: e.message }, 'apply failed');
    });
    reapply = () => {
      chain = chain.then(applyOnce).catch((e: Error) => log.error({ err: e.message }, 'apply failed'));
    };
    source.onChange(reapply);
    await new Promise<void>((resolve) => {
      process.once('SIGTERM', resolve);
      process.once('SIGINT', resolve);
    });
    // A wireguard-go signalled with kg is not restarted, and nothing brings it back (Agent.stop).
    const detached = dataplane.device.detach();
    await chain;
    await detached;
    await source.stop();
    if (flags.cleanUp) {
      for (const e of await cleanUp(dataplane, { interface: flags.cleanUpInterface }))
        log.error({ err: e.message }, 'clean-up failed');
      await encapsulation
        ?.cleanUp(host)
        .catch((e: Error) => log.error({ err: e.message }, 'clean-up of the encapsulation failed'));
    }
  });
}
