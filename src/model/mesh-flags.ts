import * as z from './zod.js';
import { Cidr } from '../net/cidr.js';
import { listOf, pair, type ByFamily } from '../net/family.js';
import { Annotation } from './annotations.js';
import { ValidationError } from './errors.js';
import { lazy } from './schema.js';
import { encapsulations, type Encapsulate } from './types.js';

/**
 * The flags an agent runs with that shape its plan, as it announces them in the
 * `kilo.squat.ai/mesh-flags` annotation, so that `kgctl` against the cluster plans with what the
 * agents really use instead of its own defaults. Keys are the flag names of `kg`.
 */
/** --compatibility: "" = Kilo manages the CNI itself. */
export const compatibilities = ['', 'flannel', 'cilium'] as const;

/**
 * --wireguard-ip-allocation: `kilo`, Kilo's positional rule (the n-th segment by key takes the n-th
 * address), or `stable`, addresses that stay put (src/mesh/allocation.ts, docs/wireguard-ips.md).
 */
export const wireGuardIPAllocations = ['kilo', 'stable'] as const;
export type WireGuardIPAllocation = (typeof wireGuardIPAllocations)[number];

export interface MeshFlags {
  /** One CIDR, or one per family (dual-stack --subnet). */
  subnet: Cidr | ByFamily<Cidr>;
  port: number;
  encapsulate: Encapsulate;
  local: boolean;
  cni: boolean;
  iptablesForwardRules: boolean;
  routeHostTraffic: boolean;
  serviceCidr: Cidr[];
  topologyLabel: string;
  compatibility: (typeof compatibilities)[number];
  leaderElection: 'annotation' | 'lease';
  namespace: string;
  /** The firewall backend the agent chose (--firewall): kgctl plan renders that one. Absent from older agents. */
  firewall?: 'auto' | 'iptables' | 'nftables';
  /** Absent from older agents and written only for `stable`: absent is `kilo`, so kilo agents' text is unchanged. */
  wireguardIpAllocation?: WireGuardIPAllocation;
  /** --relay: false = never relay other nodes' traffic (docs/relays.md). Announced only when false. */
  relay?: boolean;
}

/**
 * Why a dual-stack --subnet (IPv4's first) cannot give every segment an address in each family,
 * or null: a segment's IPv6 address sits at its IPv4 address's slot (mesh/allocation.ts), so the
 * IPv6 subnet must hold at least as many addresses. One rule for the flag and the announcement.
 */
export function subnetsProblem(subnets: ByFamily<Cidr>): string | null {
  const [v4, v6] = subnets;
  if (!v4 || !v6 || 128 - v6.prefix >= 32 - v4.prefix) return null;
  return `${v6.networkText} holds fewer addresses than ${v4.networkText}: each segment's IPv6 address sits at its IPv4 address's place, so the IPv6 prefix must be /${96 + v4.prefix} or shorter`;
}

/** The annotation is small; anything bigger is not an agent's announcement. */
const maxAnnouncementBytes = 4096;

// Every key optional and unknown keys ignored: kgctl and the agents are upgraded at different
// times, and an announcement from a newer or older agent still says what it can.
const wire = lazy(() => {
  const cidrText = z.string().check(z.refine((s) => Cidr.tryParse(s) !== null, 'not a CIDR'));
  return z.looseObject({
    subnet: z.optional(cidrText),
    // Dual-stack: every family's subnet, `subnet`'s first. A separate key, so that an agent of one
    // family announces what it did before, and an older kgctl (which skips unknown keys) still
    // reads the first family's.
    subnets: z.optional(z.array(cidrText).check(z.minLength(2), z.maxLength(2))),
    port: z.optional(z.number().check(z.int(), z.minimum(1), z.maximum(65535))),
    encapsulate: z.optional(z.enum(encapsulations)),
    local: z.optional(z.boolean()),
    cni: z.optional(z.boolean()),
    'iptables-forward-rules': z.optional(z.boolean()),
    'route-host-traffic': z.optional(z.boolean()),
    'service-cidr': z.optional(z.array(cidrText).check(z.maxLength(64))),
    'topology-label': z.optional(z.string().check(z.minLength(1), z.maxLength(317))),
    compatibility: z.optional(z.enum(compatibilities)),
    'leader-election': z.optional(z.enum(['annotation', 'lease'])),
    namespace: z.optional(z.string().check(z.minLength(1), z.maxLength(63))),
    firewall: z.optional(z.enum(['iptables', 'nftables'])),
    'wireguard-ip-allocation': z.optional(z.enum(wireGuardIPAllocations)),
    relay: z.optional(z.boolean()),
  });
});

/** The annotation's value: stable key order, so an unchanged agent never rewrites it. */
export function formatMeshFlags(f: MeshFlags): string {
  const out: z.input<ReturnType<typeof wire>> = {
    subnet: listOf(f.subnet)[0]!.masked().toString(),
    ...(listOf(f.subnet).length > 1 ? { subnets: listOf(f.subnet).map((c) => c.masked().toString()) } : {}),
    port: f.port,
    encapsulate: f.encapsulate,
    local: f.local,
    cni: f.cni,
    'iptables-forward-rules': f.iptablesForwardRules,
    'route-host-traffic': f.routeHostTraffic,
    'service-cidr': f.serviceCidr.map((c) => c.toString()),
    'topology-label': f.topologyLabel,
    compatibility: f.compatibility,
    'leader-election': f.leaderElection,
    namespace: f.namespace,
    ...(f.firewall !== undefined && f.firewall !== 'auto' ? { firewall: f.firewall } : {}),
    ...(f.wireguardIpAllocation === 'stable' ? { 'wireguard-ip-allocation': f.wireguardIpAllocation } : {}),
    // Only when false: an agent that relays (the default) announces what it did before.
    ...(f.relay === false ? { relay: false } : {}),
  };
  return JSON.stringify(out);
}

/**
 * Reads an announcement: the flags it names (keys it does not know are skipped). A wrong value (a
 * hand edit, a bug) is a ValidationError naming the field and the value; the caller ignores that
 * node's announcement, never the node.
 */
export function parseMeshFlags(text: string, object: string): Partial<MeshFlags> | ValidationError {
  const field = `metadata.annotations["${Annotation.meshFlags}"]`;
  if (text.length > maxAnnouncementBytes)
    return new ValidationError(object, field, text, `longer than ${maxAnnouncementBytes} characters`);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return new ValidationError(object, field, text, 'not JSON');
  }
  const r = wire().safeParse(json);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    const key = issue.path[0];
    const value =
      key !== undefined && typeof json === 'object' && json !== null
        ? (json as Record<string, unknown>)[String(key)]
        : json;
    return new ValidationError(object, key === undefined ? field : `${field}.${String(key)}`, value, issue.message);
  }
  const w = r.data;
  const subnets = w.subnets && pair(...(w.subnets.map((s) => Cidr.parse(s).masked()) as [Cidr, Cidr]));
  if (w.subnets && !subnets)
    return new ValidationError(object, `${field}.subnets`, w.subnets, 'two subnets of one family: one per family');
  const tooSmall = subnets && subnetsProblem(subnets);
  if (tooSmall) return new ValidationError(object, `${field}.subnets`, w.subnets, tooSmall);
  const out: Partial<MeshFlags> = {
    subnet: subnets ? subnets : w.subnet === undefined ? undefined : Cidr.parse(w.subnet).masked(),
    port: w.port,
    encapsulate: w.encapsulate,
    local: w.local,
    cni: w.cni,
    iptablesForwardRules: w['iptables-forward-rules'],
    routeHostTraffic: w['route-host-traffic'],
    serviceCidr: w['service-cidr']?.map((s) => Cidr.parse(s).masked()),
    topologyLabel: w['topology-label'],
    compatibility: w.compatibility,
    leaderElection: w['leader-election'],
    namespace: w.namespace,
    firewall: w.firewall,
    wireguardIpAllocation: w['wireguard-ip-allocation'],
    relay: w.relay,
  };
  for (const k of Object.keys(out) as (keyof MeshFlags)[]) if (out[k] === undefined) delete out[k];
  return out;
}
