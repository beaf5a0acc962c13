import { Option, type Command } from 'commander';
import { Cidr } from '../net/cidr.js';
import { listOf, pair, type ByFamily } from '../net/family.js';
import { UsageError } from '../model/errors.js';
import { encapsulations, granularities, type Granularity, type KiloNode } from '../model/types.js';
import { defaultMeshOptions, type MeshOptions } from '../mesh/options.js';
import { defaultTopologyLabel } from '../model/annotations.js';
import { compatibilities, subnetsProblem, wireGuardIPAllocations, type MeshFlags } from '../model/mesh-flags.js';

// What Go's strconv.ParseBool, and so Kilo's flags, read as true and false.
const goTrue = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const goFalse = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

/** Kilo's Go flags accept `--flag`, `--flag=true` and `--flag=false`; so do ours. */
export function parseBool(name: string) {
  return (value: string): boolean => {
    if (goTrue.has(value)) return true;
    if (goFalse.has(value)) return false;
    throw new UsageError(`--${name}: want true or false, got ${JSON.stringify(value)}`);
  };
}

const boolOptions = new WeakSet<Option>();

/**
 * A bool flag as Go writes one: `--name` is true, `--name=false` sets a value, and the argument after
 * a bare `--name` is never its value (`kgctl plan --local NODE` plans NODE). Commander's optional
 * value would take that argument, so commands holding one must go through `goBoolFlags`.
 */
export function boolOption(name: string, description: string, def: boolean): Option {
  // Optional-valued, so that commander reads `--name=value`; `goBoolFlags` turns a bare `--name`
  // into `--name=true` before commander sees it.
  const o = new Option(`--${name} [bool]`, description).argParser(parseBool(name)).default(def);
  o.flags = `--${name}[=bool]`;
  boolOptions.add(o);
  return o;
}

/**
 * `args` with each bare bool flag of `cmd` spelled `--name=true`, and `-x=value` as `-x value`.
 * @throws UsageError for `--name false`.
 */
function spellBoolFlags(cmd: Command, args: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') {
      out.push(...args.slice(i));
      break;
    }
    // Go's pflag also reads `-o=yaml` as `-o yaml`; commander would take "=yaml" as the value.
    const short = /^(-[^-])=(.*)$/s.exec(arg);
    if (short && cmd.options.some((o) => o.short === short[1] && o.required)) {
      out.push(short[1]!, short[2]!);
      continue;
    }
    const option = cmd.options.find((o) => o.long === arg || o.short === arg);
    if (option && boolOptions.has(option)) {
      const next = args[i + 1];
      // Before, `--local false` meant false; read now as a positional argument it would flip silently.
      if (next !== undefined && (goTrue.has(next) || goFalse.has(next))) {
        throw new UsageError(`${arg} ${next}: a bool flag takes its value after "=": ${arg}=${next}`);
      }
      out.push(`${arg}=true`);
      continue;
    }
    out.push(arg);
    // A valued flag's argument is its value even when it looks like a flag.
    if (option?.required && i + 1 < args.length) out.push(args[++i]!);
  }
  return out;
}

/** Gives every command under `program` that has a boolOption Go's bool-flag syntax; returns `program`. */
export function goBoolFlags<T extends Command>(program: T): T {
  const walk = (cmd: Command) => {
    if (cmd.options.some((o) => boolOptions.has(o))) {
      const parse = cmd.parseOptions.bind(cmd);
      cmd.parseOptions = (args: string[]) => parse(spellBoolFlags(cmd, args));
    }
    cmd.commands.forEach(walk);
  };
  walk(program);
  return program;
}

export function parseCidrFlag(name: string) {
  return (value: string, previous?: Cidr[] | Cidr): Cidr => {
    const c = Cidr.tryParse(value);
    if (!c) throw new UsageError(`--${name}: not a CIDR: ${JSON.stringify(value)}`);
    void previous;
    return c;
  };
}

/**
 * One CIDR, or one per family separated by a comma, as kube-controller-manager's --cluster-cidr
 * (`10.4.0.0/16,fd4b::/64`): a single one stays a Cidr, so one family is as before; two are a
 * ByFamily list, IPv4's first. With `sameSize`, the IPv6 one must hold at least as many addresses as
 * the IPv4 one: each segment's IPv6 address sits at its IPv4 address's slot (mesh/allocation.ts).
 */
export function parseFamiliesFlag(name: string, sameSize = false) {
  return (value: string): Cidr | ByFamily<Cidr> => {
    const parts = value.split(',').map((p) => p.trim());
    if (parts.length === 1) return parseCidrFlag(name)(value);
    if (parts.length > 2)
      throw new UsageError(`--${name}: at most one CIDR per family (IPv4, IPv6), got ${JSON.stringify(value)}`);
    const [a, b] = parts.map((p) => parseCidrFlag(name)(p).masked()) as [Cidr, Cidr];
    const both = pair(a, b);
    if (!both)
      throw new UsageError(
        `--${name}: two CIDRs of one family in ${JSON.stringify(value)}: one per family (IPv4, IPv6)`,
      );
    const tooSmall = sameSize ? subnetsProblem(both) : null;
    if (tooSmall) throw new UsageError(`--${name}: ${tooSmall}`);
    return both;
  };
}

export function parseIntFlag(name: string, min: number, max: number) {
  return (value: string): number => {
    if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
      throw new UsageError(`--${name}: want a whole number from ${min} to ${max}, got ${JSON.stringify(value)}`);
    }
    return Number(value);
  };
}

function oneOf<T extends string>(name: string, values: readonly T[]) {
  return (value: string): T => {
    if (!(values as readonly string[]).includes(value)) {
      throw new UsageError(`--${name}: want one of ${values.join(', ')}, got ${JSON.stringify(value)}`);
    }
    return value as T;
  };
}

/** The flags that shape a plan, named and defaulted as Kilo's `kg`. */
export function addMeshFlags(cmd: Command, opts: { allowAuto: boolean }): Command {
  const gran = opts.allowAuto ? [...granularities, 'auto' as const] : granularities;
  return cmd
    .addOption(
      new Option(
        '--mesh-granularity <granularity>',
        `location, full, cross, subnet${opts.allowAuto ? ' or auto (what the nodes announce)' : ''}`,
      )
        .argParser(oneOf('mesh-granularity', gran))
        .default(opts.allowAuto ? 'auto' : 'location'),
    )
    .addOption(
      new Option('--subnet <cidr>', 'the WireGuard subnet; dual-stack: one per family, e.g. 10.4.0.0/16,fd4b::/64')
        .argParser(parseFamiliesFlag('subnet', true))
        .default(defaultMeshOptions.subnet, '10.4.0.0/16'),
    )
    .addOption(
      new Option('--port <port>', 'WireGuard listen port when the endpoint names none')
        .argParser(parseIntFlag('port', 1, 65535))
        .default(51820),
    )
    .addOption(
      new Option('--encapsulate <strategy>', 'never, crosssubnet or always')
        .argParser(oneOf('encapsulate', encapsulations))
        .default('always'),
    )
    .addOption(boolOption('local', 'route inside a location in the clear over the private network', true))
    .addOption(
      boolOption('cni', 'Kilo manages the CNI: the pod subnet in the --cni-path conflist and pod masquerade', true),
    )
    .addOption(boolOption('iptables-forward-rules', 'accept forwarded pod traffic in FORWARD', false))
    .addOption(
      boolOption(
        'route-host-traffic',
        "route other nodes' internal IPs through WireGuard, also where they are its endpoints (fwmark 0x453, rule-based routing)",
        false,
      ),
    )
    .addOption(
      new Option('--service-cidr <cidr>', 'service CIDR not to masquerade (repeatable; one per family: a,b)')
        .argParser((v: string, prev: Cidr[] = []) => [...prev, ...listOf(parseFamiliesFlag('service-cidr')(v))])
        .default([], 'none'),
    )
    .addOption(
      new Option('--topology-label <label>', 'node label that holds the location').default(defaultTopologyLabel),
    )
    .addOption(
      new Option('--compatibility <cni>', 'run beside a CNI: flannel or cilium; "" for none').argParser(
        (value: string) => {
          if (!(compatibilities as readonly string[]).includes(value))
            throw new UsageError(`--compatibility: want flannel, cilium or "", got ${JSON.stringify(value)}`);
          return value as (typeof compatibilities)[number];
        },
      ),
    )
    .addOption(
      new Option(
        '--wireguard-ip-allocation <rule>',
        "kilo (Kilo's: the n-th segment by name takes the n-th address) or stable (addresses stay put; docs/wireguard-ips.md)",
      )
        .argParser(oneOf('wireguard-ip-allocation', wireGuardIPAllocations))
        .default('kilo'),
    );
}

/** For commands that read the cluster once (kgctl, kg apply); the agent judges readiness by its clock. */
export function nowOption(): Option {
  return new Option('--now <seconds>', 'the time readiness is judged at (default: newest last-seen)').argParser(
    parseIntFlag('now', 0, Number.MAX_SAFE_INTEGER),
  );
}

/** The mesh flags' values as commander parses them: what an agent announces (MeshFlags), and more. */
export interface MeshFlagValues extends Pick<
  MeshFlags,
  'subnet' | 'port' | 'encapsulate' | 'local' | 'cni' | 'iptablesForwardRules' | 'serviceCidr' | 'topologyLabel'
> {
  meshGranularity: Granularity | 'auto';
  /** Optional: flag values built by hand (tests, other commands) predate it. */
  routeHostTraffic?: boolean;
  /** Unset or "": Kilo manages the CNI itself. */
  compatibility?: MeshFlags['compatibility'];
  /** Optional: flag values built by hand predate it; absent is `kilo`. */
  wireguardIpAllocation?: MeshFlags['wireguardIpAllocation'];
  now?: number;
}

/** `auto`: the granularity the named node announces, else the most common among the nodes. */
export function resolveGranularity(
  flag: Granularity | 'auto',
  nodes: readonly KiloNode[],
  hostname?: string,
): Granularity {
  if (flag !== 'auto') return flag;
  const valid = (g: string | null): g is Granularity => !!g && (granularities as readonly string[]).includes(g);
  const own = nodes.find((n) => n.name === hostname)?.granularity ?? null;
  if (valid(own)) return own;
  const counts = new Map<Granularity, number>();
  for (const n of nodes) if (valid(n.granularity)) counts.set(n.granularity, (counts.get(n.granularity) ?? 0) + 1);
  let best: Granularity = 'location';
  let most = 0;
  for (const g of granularities) if ((counts.get(g) ?? 0) > most) [best, most] = [g, counts.get(g)!];
  return best;
}

export function meshOptionsFrom(v: MeshFlagValues, granularity: Granularity): MeshOptions {
  const subnets = listOf(v.subnet).map((c) => c.masked());
  const options: MeshOptions = {
    ...defaultMeshOptions,
    granularity,
    subnet: subnets[0]!,
    // Only with two families: the options of one are as before.
    ...(subnets.length > 1 ? { subnets } : {}),
    port: v.port,
    encapsulate: v.encapsulate,
    local: v.local,
    cni: v.cni,
    iptablesForwardRules: v.iptablesForwardRules,
    routeHostTraffic: v.routeHostTraffic ?? false,
    serviceCIDRs: v.serviceCidr,
    ...(v.wireguardIpAllocation === 'stable' ? { wireGuardIPAllocation: v.wireguardIpAllocation } : {}),
  };
  // Beside a CNI, the CNI routes inside the location: Kilo adds WireGuard (and, beside Cilium, IPIP
  // between a leader and its followers through Cilium's overlay).
  return v.compatibility ? { ...options, local: false, compatibility: v.compatibility } : options;
}
