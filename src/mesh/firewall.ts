import { aggregate, PrefixSet } from '../net/aggregate.js';
import type { Cidr } from '../net/cidr.js';
import { encapsulatorOf, type Encapsulator } from '../encapsulation/index.js';
import type { MeshOptions } from './options.js';
import { groupSegments, type Topology } from './topology.js';
import type { Firewall, MasqueradeException, MasqueradeExceptionReason } from './types.js';

/**
 * Kilo's firewall for one node, as intent: masquerade what leaves the mesh, never what stays in
 * it; accept IPIP only from the nodes that route to this one in the clear.
 */
export function planFirewall(t: Topology, options: MeshOptions, enc: Encapsulator = encapsulatorOf(options)): Firewall {
  const self = t.local.node;
  const text = (cs: readonly Cidr[]) => cs.map((c) => c.networkText);

  // Some distributions drop forwarded packets by default; a leader forwards for its whole segment.
  const forward =
    options.cni && options.iptablesForwardRules
      ? t.local.leader
        ? groupSegments(t).flatMap((s) => s.nodes.flatMap((n) => n.podCIDRs))
        : self.podCIDRs
      : [];

  // Replies from an allowed-location network (a printer LAN) must find their way back.
  const ownGroup = t.local.segment.group;
  const allowedLocationIPs: Cidr[] = [];
  for (let i = 0; i < t.segments.length; i++) {
    const s = t.segments[i]!;
    if (s.group === ownGroup) allowedLocationIPs.push(...s.allowedLocationIPs);
  }

  // Every iptables-restore and iptables-save costs time in proportion to the whole table, so sets
  // of sources and destinations go in as their fewest prefixes: contiguous pod CIDRs and WireGuard
  // IPs collapse, and the matched addresses stay exactly the same.
  // One group per reason, so `iptables -S` still says why an address is not masqueraded; an
  // address an earlier group covers is left out of the later ones (Kilo writes the WireGuard /32
  // twice, as itself and as an allowed IP).
  const groups: [MasqueradeExceptionReason, Cidr[]][] = [
    ['wireguard-ips', wireGuardHostsOf(t.segments)],
    ['known-ips', allowedIPsOf(t.segments)],
    ['peers', allowedIPsOf(t.peers)],
    ['service-cidrs', options.serviceCIDRs],
  ];
  let returned = new PrefixSet([]);
  const exceptions: MasqueradeException[] = groups.map(([reason, destinations]) => {
    const kept = aggregate(destinations, returned);
    returned = returned.plus(kept);
    return { reason, destinations: text(kept) };
  });

  let ipip: Firewall['ipip'] = null;
  if (enc.acceptsIPIP) {
    // Kilo's upstream list is empty in cross mode, which drops all IPIP inside a location:
    // accept exactly the group members that route to this node in the clear.
    const sources: string[] = [];
    const group = groupSegments(t);
    for (let i = 0; i < group.length; i++) {
      for (let j = 0; j < group[i]!.nodes.length; j++) {
        const n = group[i]!.nodes[j]!;
        if (n === self || n.internalIPs.length === 0) continue;
        for (const c of enc.ipipSourcesOf(n)) sources.push(c.networkText);
      }
    }
    ipip = { sources };
  }

  return {
    masquerade: {
      podCIDRs: options.cni ? text(masqueradedPodCIDRs(self.podCIDRs)) : [],
      allowedLocationIPs: text(allowedLocationIPs),
      peerAllowedIPs: text(aggregate(allowedIPsOf(t.peers))),
      exceptions,
    },
    forwardPodCIDRs: text(forward),
    ipip,
  };
}

/**
 * The pod CIDRs whose traffic out of the mesh is masqueraded: IPv4's, and IPv6's only when it is
 * unique local (fc00::/7): a public IPv6 pod range is routed as it is, not hidden behind the node.
 */
function masqueradedPodCIDRs(podCIDRs: readonly Cidr[]): readonly Cidr[] {
  if (podCIDRs.length === 1 && podCIDRs[0]!.family === 4) return podCIDRs;
  return podCIDRs.filter((c) => c.family === 4 || c.ip.isNonPublic());
}

/**
 * Every allowed IP of the segments or Peers, in order. An index loop, not flatMap nor for-of: cold
 * code over thousands of segments (docs/performance.md#cold-code).
 */
function allowedIPsOf(list: readonly { allowedIPs: readonly Cidr[] }[]): Cidr[] {
  // Counted first and made at its length: pushed, 60,000 prefixes at 20,000 nodes grew the array
  // (copying it) a dozen times.
  let count = 0;
  for (let i = 0; i < list.length; i++) count += list[i]!.allowedIPs.length;
  const out = new Array<Cidr>(count);
  let at = 0;
  for (let i = 0; i < list.length; i++) {
    const cs = list[i]!.allowedIPs;
    for (let j = 0; j < cs.length; j++) out[at++] = cs[j]!;
  }
  return out;
}

/** Every segment's WireGuard IPs as host prefixes, in order: no array per segment (as flatMap makes). */
function wireGuardHostsOf(segments: Topology['segments']): Cidr[] {
  const out: Cidr[] = [];
  for (let i = 0; i < segments.length; i++) {
    const ips = segments[i]!.wireGuardIPs;
    for (let j = 0; j < ips.length; j++) out.push(ips[j]!.toHostCidr());
  }
  return out;
}
