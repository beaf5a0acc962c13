import { Command, Option } from 'commander';
import { spawnSync } from 'node:child_process';
import { granularities, type Granularity } from '../../../src/model/types.js';
import { UsageError } from '../../../src/model/errors.js';
import { labApiProxyCommand } from './apiproxy-command.js';
import { blockCommand } from './block-command.js';
import { labApiServerCommand } from './apiserver-command.js';
import { clusterLocations, describeLocation, describeNat, natLocations } from './locations.js';
import { Lab, clusterKubeconfig } from './lab.js';
import { internetPrefix, maxClusters, peerNs, routerNs } from './layout.js';
import { peerRunDir } from './peer.js';
import { ipFamilies, type IpFamily } from './families.js';
import { checkFamilyFlags } from './family-flags.js';
import { inNodeNs, inNs } from './sh.js';
import { isAlive } from './state.js';
import { teardown } from './teardown.js';
import { invokedAs, report } from './report.js';
import { logLevels, logs, type LogLevel } from '../../../src/agent/log-levels.js';

const defaultStateDir = '/tmp/kilo-lab';

function intOption(name: string, min: number, max: number) {
  return (v: string): number => {
    const n = Number(v);
    if (!/^\d+$/.test(v) || n < min || n > max)
      throw new UsageError(`--${name}: want a whole number from ${min} to ${max}, got ${JSON.stringify(v)}`);
    return n;
  };
}

const stateDirOption = () =>
  new Option('--state-dir <dir>', 'where the lab records what it made').default(defaultStateDir);
/** --cluster N: which cluster of a lab brought up with --clusters (default: `fallback`). */
const clusterOption = (fallback: string) =>
  new Option('--cluster <n>', `which cluster of a --clusters lab (default: ${fallback})`).argParser(
    intOption('cluster', 1, maxClusters),
  );
/**
 * The command of `kg lab exec NODE …`. Options after NODE pass through to the command, so
 * `kg lab exec n1 --state-dir D -- ip addr` would run `--state-dir D -- ip addr` in the default lab:
 * what stands before a `--` belongs to kg (only --state-dir may), the rest is the command.
 */
export function execArgs(rest: readonly string[], stateDir: string): { argv: string[]; stateDir: string } {
  const dashes = rest.indexOf('--');
  if (dashes < 0) return { argv: [...rest], stateDir };
  const ours = rest.slice(0, dashes);
  for (let i = 0; i < ours.length; i++) {
    const arg = ours[i]!;
    if (arg === '--state-dir' && i + 1 < ours.length) stateDir = ours[++i]!;
    else if (arg.startsWith('--state-dir=')) stateDir = arg.slice('--state-dir='.length);
    else
      throw new UsageError(
        `kg lab exec: ${JSON.stringify(arg)} before "--": only --state-dir goes there; the command goes after "--"`,
      );
  }
  return { argv: rest.slice(dashes + 1), stateDir };
}

const say = (line: string) => process.stdout.write(`${line}\n`);

/**
 * --log-level, on `kg lab` and on the commands that wait for the mesh (`kg lab show --log-level
 * debug` and `kg lab --log-level debug show` alike; `kg --log-level debug lab show` is the
 * latter, kg.ts). debug (or all) reports the mesh's progress more often and gives a bug's stack
 * trace (run.ts).
 */
const logLevelOption = () =>
  new Option('--log-level <level>', 'how much to say (debug: progress every 2 s)').choices(logLevels);

/** The --log-level given to the command or to `kg lab` before it. */
function verbose(cmd: Command): boolean {
  const level = cmd.optsWithGlobals<{ logLevel?: LogLevel }>().logLevel ?? 'info';
  return logs(level, 'debug');
}

interface UpFlags {
  locations: number;
  nodes: number;
  granularity: Granularity;
  natLocation?: number;
  symmetricNatLocation: number[];
  peer: boolean;
  stateDir: string;
  prefix: string;
  graph?: string;
  wait: boolean;
  clusters: number;
  ipFamily: IpFamily;
  ipv6OnlyLocation?: number;
}

/** `kg lab up`: builds the lab, starts its API server and agents, waits for the mesh and shows it. */
function upCommand(): Command {
  return new Command('up')
    .description('build the lab, start the API server and an agent per node, wait for the mesh, show it')
    .addOption(new Option('--locations <n>', 'locations').argParser(intOption('locations', 1, 20)).default(3))
    .addOption(new Option('--nodes <n>', 'nodes per location').argParser(intOption('nodes', 1, 50)).default(2))
    .addOption(new Option('--granularity <g>', 'mesh granularity').choices(granularities).default('cross'))
    .addOption(
      new Option('--nat-location <n>', 'put this location (1-based) behind a NAT gateway').argParser(
        intOption('nat-location', 1, 20),
      ),
    )
    .addOption(
      new Option(
        '--symmetric-nat-location <n>',
        'put this location (1-based) behind a symmetric NAT (a new port per destination: hole punching fails); repeatable',
      )
        .argParser((v: string, prev: number[]) => [...prev, intOption('symmetric-nat-location', 1, 20)(v)])
        .default([]),
    )
    .option('--peer', 'add a Peer (a namespace configured from kgctl showconf peer)', false)
    .addOption(
      new Option('--ip-family <family>', 'the addresses of pods, LANs and uplinks (dual: both; docs/dual-stack.md)')
        .choices(ipFamilies)
        .default('ipv4'),
    )
    .addOption(
      new Option(
        '--ipv6-only-location <n>',
        "with --ip-family dual: only IPv6 on this location's LAN and uplink (its pods keep both families)",
      ).argParser(intOption('ipv6-only-location', 1, 20)),
    )
    .addOption(
      new Option('--clusters <n>', 'independent clusters on one internet, each with its own API server and ranges')
        .argParser(intOption('clusters', 1, maxClusters))
        .default(1),
    )
    .addOption(stateDirOption())
    .addOption(new Option('--prefix <prefix>', 'prefix of every namespace name').default('kl-'))
    .option('--graph <file>', 'where to write the SVG graph (default STATE_DIR/graph.svg)')
    .option('--no-wait', 'return once the agents are started, without waiting for the mesh')
    .addOption(logLevelOption())
    .action(async (f: UpFlags, cmd: Command) => {
      if (process.getuid?.() !== 0) throw new UsageError('kg lab needs root (it creates network namespaces)');
      if (f.natLocation !== undefined && f.natLocation > f.locations)
        throw new UsageError(`--nat-location ${f.natLocation}: there are only ${f.locations} locations`);
      for (const l of f.symmetricNatLocation) {
        if (l > f.locations)
          throw new UsageError(`--symmetric-nat-location ${l}: there are only ${f.locations} locations`);
        if (l === f.natLocation)
          throw new UsageError(`--symmetric-nat-location ${l}: location ${l} is already behind --nat-location`);
      }
      checkFamilyFlags(f);
      if (!/^[a-z0-9-]{1,12}$/.test(f.prefix))
        throw new UsageError(`--prefix: want up to 12 of a-z, 0-9 and -, got ${JSON.stringify(f.prefix)}`);
      const labs = await Lab.upClusters(
        f.stateDir,
        {
          locations: f.locations,
          nodesPerLocation: f.nodes,
          granularity: f.granularity,
          natLocation: f.natLocation ?? null,
          symmetricNatLocations: [...new Set(f.symmetricNatLocation)].sort((a, b) => a - b),
          peer: f.peer,
          prefix: f.prefix,
          ...(f.ipFamily === 'ipv4' ? {} : { ipFamily: f.ipFamily, ipv6OnlyLocation: f.ipv6OnlyLocation ?? null }),
        },
        f.clusters,
        say,
      );
      say(`lab up: state in ${f.stateDir}`);
      if (labs.length === 1) say(`kubeconfig for kubectl and kgctl on this machine: ${labs[0]!.kubeconfig}`);
      else {
        for (const lab of labs) {
          const p = lab.plan;
          say(
            `cluster ${p.cluster}: kubeconfig ${clusterKubeconfig(f.stateDir, p.cluster)}; pods ${p.podRange}, services ${p.serviceCidr}, WireGuard ${p.wireguardSubnet}, API server ${p.apiAddress}`,
          );
        }
        say('the clusters are not linked: see docs/multi-cluster.md');
      }
      if (!f.wait) return;
      let converged = true;
      for (const lab of labs) {
        if (labs.length > 1) say(`\ncluster ${lab.plan.cluster}:`);
        const graph = lab.plan.cluster === 1 ? f.graph : undefined;
        if (!(await report(lab, graph ?? lab.state.path('graph.svg'), say, { verbose: verbose(cmd) })))
          converged = false;
      }
      say(`\ntear down with: ${invokedAs()} lab down --state-dir ${f.stateDir}`);
      if (!converged) process.exitCode = 1;
    });
}

/** `kg lab down`: removes what the state directory records, also after a crash of `up`. */
function downCommand(): Command {
  return new Command('down')
    .description('remove everything the lab made: processes, namespaces, files (also after a crash of up)')
    .addOption(stateDirOption())
    .action(async (f: { stateDir: string }) => {
      await teardown(f.stateDir, say);
      say('lab down');
    });
}

/** `kg lab status`: the lab's nodes, agents and API server. */
function statusCommand(): Command {
  return new Command('status')
    .description("the lab's nodes, agents and API server")
    .addOption(stateDirOption())
    .addOption(clusterOption('all'))
    .action(async (f: { stateDir: string; cluster?: number }) => {
      const labs = f.cluster === undefined ? Lab.openAll(f.stateDir) : [Lab.openCluster(f.stateDir, f.cluster)];
      const multi = Lab.openAll(f.stateDir).length > 1;
      for (const lab of labs) await status(f.stateDir, lab, multi);
    });
}

/** One cluster's part of `kg lab status` (`multi`: the lab has several: say which this is). */
async function status(stateDir: string, lab: Lab, multi: boolean): Promise<void> {
  const o = lab.options;
  const p = lab.plan;
  const which = multi
    ? ` (cluster ${p.cluster}: pods ${p.podRange}, services ${p.serviceCidr}, WireGuard ${p.wireguardSubnet})`
    : '';
  // Locations as the cluster has them now (a node may have been moved), not as the lab was built;
  // none when its API server does not answer.
  const locations = clusterLocations(await lab.api.list('nodes').catch(() => []));
  const nat = natLocations(lab.nodes, locations, new Set(o.symmetricNatLocations));
  say(
    `lab in ${stateDir}${which}: ${o.locations} locations × ${o.nodesPerLocation} nodes, ${o.granularity}${o.ipFamily && o.ipFamily !== 'ipv4' ? `, ${o.ipFamily}` : ''}${o.ipv6OnlyLocation ? `, IPv6 only: loc${o.ipv6OnlyLocation}` : ''}${nat.size > 0 ? `, ${describeNat(nat)}` : ''}${o.peer ? ', a Peer' : ''}`,
  );
  const kubeconfig = multi ? clusterKubeconfig(stateDir, p.cluster) : lab.kubeconfig;
  say(`kubeconfig for kubectl and kgctl on this machine: ${kubeconfig}`);
  for (const m of lab.state.state.made) {
    if (m.kind === 'process' && !m.what.startsWith('kg '))
      say(`${m.what}: pid ${m.pid} ${isAlive(m) ? 'running' : 'GONE'}`);
  }
  for (const n of lab.nodes) {
    const a = lab.agentProcess(n.name);
    const health = a ? lab.agentGet(n.name, '/health').body.trim() : 'not running';
    const where = locations.has(n.name) ? describeLocation(locations.get(n.name)!, nat) : '?';
    say(
      `${n.name.padEnd(10)} location ${where.padEnd(8)} ns ${n.ns.padEnd(16)} lan ${n.lanIP.padEnd(14)} public ${(n.publicIP ?? 'NAT').padEnd(14)} pod ${n.podCIDR.padEnd(14)} agent ${a ? `pid ${a.pid}` : '-'}: ${health}`,
    );
  }
}

/** `kg lab exec`: a command in a node's (or the peer's, the router's, a pod's) namespace. */
function execCommand(): Command {
  return new Command('exec')
    .description("run a command in a node's namespace (as its agent sees it: wg works); also peer, inet, NODE-pod")
    .argument('<node>', 'node name, NODE-pod, peer or inet')
    .argument('<command...>', 'the command (after --)')
    .addOption(stateDirOption())
    .addOption(clusterOption('the cluster that has NODE'))
    .passThroughOptions()
    .action((target: string, rest: string[], f: { stateDir: string; cluster?: number }) => {
      const { argv, stateDir } = execArgs(rest, f.stateDir);
      if (argv.length === 0) throw new UsageError('kg lab exec NODE -- COMMAND: no command given');
      // Node names differ between clusters (cluster 2's start with c2-): NODE picks its cluster.
      const all = f.cluster === undefined ? Lab.openAll(stateDir) : [Lab.openCluster(stateDir, f.cluster)];
      const lab = all.find((l) => l.nodes.some((n) => n.name === target || `${n.name}-pod` === target)) ?? all[0]!;
      const prefix = lab.options.prefix;
      let code: number;
      if (lab.nodes.some((n) => n.name === target)) code = lab.exec(target, argv, 'inherit').code;
      else {
        // The Peer runs wireguard-go too: wg finds its socket only with the Peer's run directory bound.
        const ns =
          target === 'inet'
            ? routerNs(internetPrefix(lab.options))
            : lab.nodes.find((n) => `${n.name}-pod` === target)?.podNs;
        const full =
          target === 'peer' ? inNodeNs(peerNs(prefix), peerRunDir(lab), argv) : ns ? inNs(ns, argv) : undefined;
        if (!full)
          throw new UsageError(
            `no lab node ${JSON.stringify(target)} (nodes: ${lab.nodes.map((n) => n.name).join(', ')}; or NODE-pod, peer, inet)`,
          );
        code = spawnSync(full[0]!, full.slice(1), { stdio: 'inherit' }).status ?? 1;
      }
      process.exitCode = code;
    });
}

/** `kg lab show`: the connectivity matrix, routes and graph of a running lab. */
function showCommand(): Command {
  return new Command('show')
    .description('the connectivity matrix, routes and graph of a running lab')
    .addOption(stateDirOption())
    .option('--graph <file>', 'where to write the SVG graph (default STATE_DIR/graph.svg)')
    .addOption(
      new Option('--timeout <seconds>', 'how long to wait for the mesh')
        .argParser(intOption('timeout', 1, 3600))
        .default(120),
    )
    .addOption(clusterOption('1'))
    .addOption(logLevelOption())
    .action(async (f: { stateDir: string; graph?: string; timeout: number; cluster?: number }, cmd: Command) => {
      const lab = Lab.openCluster(f.stateDir, f.cluster ?? 1);
      const o = { verbose: verbose(cmd), timeoutMs: f.timeout * 1000 };
      // A mesh that does not converge is a finding (report says which pairs fail): exit 1.
      if (!(await report(lab, f.graph ?? lab.state.path('graph.svg'), say, o))) process.exitCode = 1;
    });
}

/** `kg lab`: a multi-location cluster of network namespaces on this machine, running real agents. */
export function labCommand(): Command {
  return new Command('lab')
    .description('a multi-location cluster of network namespaces on this machine, with real agents and wireguard-go')
    .enablePositionalOptions()
    .addOption(logLevelOption())
    .addCommand(upCommand())
    .addCommand(statusCommand())
    .addCommand(showCommand())
    .addCommand(execCommand())
    .addCommand(downCommand())
    .addCommand(blockCommand(true))
    .addCommand(blockCommand(false))
    .addCommand(labApiServerCommand())
    .addCommand(labApiProxyCommand());
}
