import { Option, type Command } from 'commander';
import { UsageError } from '../model/errors.js';
import { Cidr } from '../net/cidr.js';
import { logLevels } from '../agent/log-levels.js';
import { firewallFlags, type FirewallFlag } from '../dataplane/firewall-flag.js';
import { addMeshFlags, boolOption, parseCidrFlag, type MeshFlagValues } from './flags.js';

/** Go-style durations as Kilo's flags take them: 30s, 5m, 1h30m, 500ms. */
export function parseDuration(name: string) {
  return (value: string): number => {
    const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/g;
    let total = 0;
    let consumed = 0;
    for (const m of value.matchAll(re)) {
      total += Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h'];
      consumed += m[0].length;
    }
    if (consumed !== value.length || value.length === 0 || total <= 0) {
      throw new UsageError(`--${name}: not a duration (e.g. 30s, 5m): ${JSON.stringify(value)}`);
    }
    return total;
  };
}

/** The flags of Kilo's `kg`, same names and defaults, plus kilo-ts's own (marked in the help). */
export function addAgentFlags(cmd: Command): Command {
  addMeshFlags(cmd, { allowAuto: false });
  return cmd
    .addOption(
      new Option('--hostname <name>', 'name of this node in the cluster').default(
        process.env['NODE_NAME'] ?? undefined,
        '$NODE_NAME',
      ),
    )
    .addOption(new Option('--kubeconfig <path>', 'kubeconfig file (default: in-cluster)'))
    .addOption(new Option('--master <url>', 'API server address (overrides the kubeconfig)'))
    .addOption(new Option('--interface <name>', 'the WireGuard interface').default('kilo0'))
    .addOption(
      new Option('--cni-path <path>', 'the CNI config Kilo keeps in step with spec.podCIDR').default(
        '/etc/cni/net.d/10-kilo.conflist',
      ),
    )
    .addOption(
      new Option('--internal-cidr <cidr>', 'look for the internal IP only inside this CIDR (repeatable)')
        .argParser((v: string, prev: Cidr[] = []) => [...prev, parseCidrFlag('internal-cidr')(v)])
        .default([], 'any private address'),
    )
    .addOption(
      new Option('--resync-period <duration>', 'full reconcile at least this often')
        .argParser(parseDuration('resync-period'))
        .default(30_000, '30s'),
    )
    .addOption(boolOption('clean-up', 'remove Kilo routes, rules and iptables on exit', true))
    .addOption(boolOption('clean-up-interface', 'also remove the WireGuard interface on exit', false))
    .addOption(boolOption('create-interface', 'create the WireGuard interface (false: adopt an existing one)', true))
    .addOption(new Option('--mtu <mtu>', 'WireGuard MTU: a number or auto (default-route MTU - 80)').default('auto'))
    .addOption(boolOption('prioritise-private-addresses', 'prefer a private address as the endpoint', false))
    .addOption(new Option('--listen <addr>', 'address for /health, /metrics and /graph').default(':1107'))
    .addOption(
      boolOption(
        'metrics-per-peer',
        'kilo-ts: /metrics also has a series per WireGuard peer and figure (three per node; else totals)',
        false,
      ),
    )
    .addOption(
      boolOption(
        'relay',
        'kilo-ts: relay between peers that cannot reach each other directly (false: never chosen as a relay; see docs/relays.md)',
        true,
      ),
    )
    .addOption(new Option('--log-level <level>', 'how much to log').choices(logLevels).default('info'))
    .addOption(
      new Option('--backend <backend>', "where the cluster is read from (Kilo's flag; only kubernetes)")
        .choices(['kubernetes'])
        .default('kubernetes'),
    )
    .addOption(
      new Option(
        '--firewall <backend>',
        "kilo-ts: who writes Kilo's firewall: iptables, nftables (its own table inet kilo) or auto (see docs/kg.md#firewall)",
      )
        .choices(firewallFlags)
        .default('auto'),
    )
    .addOption(
      new Option('--wireguard <implementation>', 'kilo-ts: kernel, userspace (wireguard-go) or auto')
        .choices(['auto', 'kernel', 'userspace'])
        .default('auto'),
    )
    .addOption(
      new Option(
        '--leader-election <mode>',
        "kilo-ts: who leads a location: annotation (Kilo's rule) or lease (a Lease per location, fails over)",
      )
        .choices(['annotation', 'lease'])
        .default('annotation'),
    )
    .addOption(
      new Option('--namespace <name>', 'kilo-ts: the namespace of the agent, where its Leases live').default(
        process.env['POD_NAMESPACE'] ?? 'kube-system',
        '$POD_NAMESPACE or kube-system',
      ),
    )
    .addOption(
      new Option('--leader-lease-duration <duration>', 'kilo-ts: how long a location Lease is valid unrenewed')
        .argParser(parseDuration('leader-lease-duration'))
        .default(10_000, '10s'),
    )
    .addOption(
      new Option('--leader-renew-interval <duration>', 'kilo-ts: how often the leader renews its Lease')
        .argParser(parseDuration('leader-renew-interval'))
        .default(2_000, '2s'),
    )
    .addOption(
      new Option('--leader-skew-margin <duration>', 'kilo-ts: the clock difference between nodes a Lease tolerates')
        .argParser(parseDuration('leader-skew-margin'))
        .default(1_000, '1s'),
    );
}

export interface AgentFlagValues extends MeshFlagValues {
  hostname?: string;
  kubeconfig?: string;
  master?: string;
  interface: string;
  cniPath: string;
  internalCidr: Cidr[];
  resyncPeriod: number;
  cleanUp: boolean;
  cleanUpInterface: boolean;
  createInterface: boolean;
  mtu: string;
  prioritisePrivateAddresses: boolean;
  listen: string;
  metricsPerPeer: boolean;
  /** --relay: false = never relay for other nodes (announced in kilo.squat.ai/mesh-flags). */
  relay: boolean;
  logLevel: (typeof logLevels)[number];
  wireguard: 'auto' | 'kernel' | 'userspace';
  firewall: FirewallFlag;
  leaderElection: 'annotation' | 'lease';
  namespace: string;
  leaderLeaseDuration: number;
  leaderRenewInterval: number;
  leaderSkewMargin: number;
}

/** The Lease timings, checked: renewals must fit in the duration with the margin to spare. */
export function electionTiming(v: AgentFlagValues): { durationMs: number; renewMs: number; skewMs: number } {
  const t = { durationMs: v.leaderLeaseDuration, renewMs: v.leaderRenewInterval, skewMs: v.leaderSkewMargin };
  if (t.durationMs % 1000 !== 0)
    throw new UsageError(`--leader-lease-duration: whole seconds (a Lease counts seconds), got ${t.durationMs} ms`);
  if (t.renewMs + t.skewMs >= t.durationMs)
    throw new UsageError(
      `--leader-renew-interval (${t.renewMs} ms) plus --leader-skew-margin (${t.skewMs} ms) must be less than --leader-lease-duration (${t.durationMs} ms)`,
    );
  return t;
}

/** --mtu: "auto" (null here: measured at start) or a number. */
export function parseMTU(value: string): number | 'auto' {
  if (value === 'auto') return 'auto';
  if (!/^\d+$/.test(value) || Number(value) < 1280 || Number(value) > 65535) {
    throw new UsageError(`--mtu: want auto or a number from 1280 to 65535, got ${JSON.stringify(value)}`);
  }
  return Number(value);
}

export function requireHostname(v: { hostname?: string }): string {
  if (!v.hostname) throw new UsageError('--hostname is required (or set NODE_NAME)');
  return v.hostname;
}
