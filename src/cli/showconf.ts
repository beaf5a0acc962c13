import { Command, Option } from 'commander';
import { toYaml } from './yaml-output.js';
import { Cidr } from '../net/cidr.js';
import { UsageError } from '../model/errors.js';
import { isNodeReady } from '../model/ready.js';
import { topologyOf } from '../mesh/compute.js';
import { planNode } from '../mesh/plan.js';
import { renderIni, type IniConfig } from '../wireguard/ini.js';
import { addLiveFlags, loadCluster, type LoadedCluster } from './cluster.js';
import { addMeshFlags, boolOption, type MeshFlagValues } from './flags.js';
import { kgctlGlobalFlags, shareFlags, showconfFlags } from './shared-flags.js';
import {
  asPeerIni,
  notLeader,
  nodeAsPeer,
  nodeConfig,
  peerAsPeer,
  peerConfig,
  peerObject,
  requireLeader,
  type AsPeer,
} from './showconf-conf.js';

type Output = 'wireguard' | 'json' | 'yaml';

interface ShowconfFlags extends MeshFlagValues {
  cluster?: string;
  output: Output;
  asPeer: boolean;
  allowedIps: Cidr[];
}

/** `--allowed-ips` repeats and takes comma-separated lists, as Kilo's does. */
function collectCidrs(value: string, previous: Cidr[] = []): Cidr[] {
  const out = [...previous];
  for (const part of value.split(',')) {
    const text = part.trim();
    if (text === '') continue;
    const c = Cidr.tryParse(text);
    if (!c) throw new UsageError(`--allowed-ips: not a CIDR: ${JSON.stringify(text)}`);
    out.push(c.masked());
  }
  return out;
}

function subcommand(name: 'node' | 'peer', description: string): Command {
  const cmd = new Command(name)
    .description(description)
    .argument('<name>', `the ${name} name`)
    .option('--cluster <file>', 'cluster snapshot (Kubernetes List or multi-document YAML)')
    // A Go bool flag: `--as-peer=false` reads, and `showconf node --as-peer NAME` keeps NAME.
    .addOption(
      boolOption(
        'as-peer',
        'show the node or peer as a [Peer] someone else adds (with -o json|yaml: a Peer object)',
        false,
      ),
    )
    .addOption(
      new Option('-o, --output <format>', 'wireguard, json or yaml')
        .choices(['wireguard', 'json', 'yaml'])
        .default('wireguard'),
    )
    .addOption(
      new Option('--allowed-ips <cidrs>', 'with --as-peer: extra allowed IPs (comma-separated, repeatable)')
        .argParser(collectCidrs)
        .default([], 'none'),
    );
  return addLiveFlags(addMeshFlags(cmd, { allowAuto: true }));
}

export function showconfCommand(): Command {
  const node = subcommand(
    'node',
    "a node's WireGuard configuration as its agent sets it (never the private key)",
  ).action(async (name: string, flags: ShowconfFlags) => {
    checkFlags(flags);
    const loaded = await loadCluster(flags, name);
    const t = topologyOf(loaded.cluster, name, loaded.options, loaded.now, loaded.leaders);
    if (flags.asPeer) {
      // As Kilo's kgctl: a note on stderr, nothing on stdout, exit 0, so that Kilo's documented
      // loop over every node (`showconf node $n --as-peer | kubectl apply -f -`) goes on under
      // `set -o pipefail` too; the location's leader gives the segment's Peer.
      const why = notLeader(t);
      if (why !== null) return void process.stderr.write(`kgctl: ${why}\n`);
      return writeAsPeer(nodeAsPeer(t, flags.allowedIps), flags.output);
    }
    requireLeader(t);
    await write(nodeConfig(planNode(t, loaded.options)), flags.output);
  });
  const peer = subcommand('peer', 'the WireGuard configuration a Peer needs to join the mesh').action(
    async (name: string, flags: ShowconfFlags) => {
      checkFlags(flags);
      const loaded = await loadCluster(flags);
      const found = loaded.cluster.peers.find((p) => p.name === name);
      if (!found) throw new UsageError(missingPeer(loaded, name));
      if (flags.asPeer) return writeAsPeer(peerAsPeer(found, flags.allowedIps), flags.output);
      await write(
        peerConfig(topologyOf(loaded.cluster, anyReadyNode(loaded), loaded.options, loaded.now, loaded.leaders), name),
        flags.output,
      );
    },
  );
  const showconf = new Command('showconf')
    .description('print WireGuard configuration (wg-quick INI) for a node or a Peer')
    .usage('[flags] (node|peer) <name> [flags]');
  // As in Kilo, showconf's flags and the global ones go before `node`/`peer` too.
  return shareFlags(showconf, node, [...kgctlGlobalFlags, ...showconfFlags])
    .addCommand(node)
    .addCommand(peer);
}

function checkFlags(flags: ShowconfFlags): void {
  if (flags.allowedIps.length > 0 && !flags.asPeer) throw new UsageError('--allowed-ips only applies with --as-peer');
}

function missingPeer(loaded: LoadedCluster, name: string): string {
  const rejected = loaded.cluster.errors.find((e) => e.object === `Peer ${JSON.stringify(name)}`);
  return rejected
    ? `Peer ${JSON.stringify(name)} was rejected: ${rejected.message}`
    : `Peer ${JSON.stringify(name)} not found`;
}

/** A Peer's config does not depend on the node it is computed from; take the first ready one by name. */
function anyReadyNode(loaded: LoadedCluster): string {
  const ready = loaded.cluster.nodes
    .filter((n) => isNodeReady(n, loaded.now))
    .map((n) => n.name)
    .sort();
  if (ready.length === 0) throw new UsageError('no ready nodes in the cluster: a Peer has nothing to connect to');
  return ready[0]!;
}

async function write(config: IniConfig, output: Output): Promise<void> {
  if (output === 'json') process.stdout.write(`${JSON.stringify(config, null, 2)}\n`);
  else if (output === 'yaml') process.stdout.write(await toYaml(config));
  else process.stdout.write(renderIni(config));
}

async function writeAsPeer(p: AsPeer, output: Output): Promise<void> {
  if (output === 'json') process.stdout.write(`${JSON.stringify(peerObject(p), null, 2)}\n`);
  else if (output === 'yaml') process.stdout.write(await toYaml(peerObject(p)));
  else process.stdout.write(renderIni(asPeerIni(p)));
}
