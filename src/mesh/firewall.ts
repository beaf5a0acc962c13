import { aggregate, PrefixSet } from '../net/aggregate.js';
import type { Cidr } from '../net/cidr.js';
import { encapsulatorOf, type Encapsulator } from '../encapsulation/index.js';
import type { MeshOptions } from './options.js';
import { groupSegments, type Topology } from './topology.js';
import type { Firewall, FirewallRule, IPFamily } from './types.js';

export const natChain = 'KILO-NAT';
export const ipipChain = 'KILO-IPIP';

/**
 * Kilo's iptables rules for one node: masquerade what leaves the mesh, never what stays in it;
 * accept IPIP only from the nodes that route to this one in the clear.
 */
export function planFirewall(t: Topology, options: MeshOptions, enc: Encapsulator = encapsulatorOf(options)): Firewall {
  const fw: Firewall = {
    chains: [
      { family: 4, table: 'nat', name: natChain },
      { family: 6, table: 'nat', name: natChain },
    ],
    rules: [],
  };
  const add = (
    family: IPFamily,
    table: FirewallRule['table'],
    chain: string,
    args: string[],
    comment: string,
    position: FirewallRule['position'] = 'append',
  ) => fw.rules.push({ family, table, chain, args, comment, position });
  const fam = (c: Cidr): IPFamily => c.family;
  const self = t.local.node;

  if (options.cni) {
    for (const pod of self.podCIDRs) {
      add(
        fam(pod),
        'nat',
        'POSTROUTING',
        ['-s', pod.networkText, '-j', natChain],
        'Kilo: jump to KILO-NAT chain',
        'prepend',
      );
    }
  }
  if (options.cni && options.iptablesForwardRules) {
    // Some distributions drop forwarded packets by default; a leader forwards for its whole segment.
    const cidrs = t.local.leader ? groupSegments(t).flatMap((s) => s.nodes.flatMap((n) => n.podCIDRs)) : self.podCIDRs;
    for (const c of cidrs) {
      add(
        fam(c),
        'filter',
        'FORWARD',
        ['-s', c.networkText, '-j', 'ACCEPT'],
        'Kilo: forward packets from the pod subnet',
        'prepend',
      );
      add(
        fam(c),
        'filter',
        'FORWARD',
        ['-d', c.networkText, '-j', 'ACCEPT'],
        'Kilo: forward packets to the pod subnet',
        'prepend',
      );
    }
  }
  const ownGroup = t.local.segment.group;
  for (let i = 0; i < t.segments.length; i++) {
    const s = t.segments[i]!;
    // Replies from an allowed-location network (a printer LAN) must find their way back.
    if (s.group === ownGroup && s.allowedLocationIPs.length > 0) {
      for (const c of s.allowedLocationIPs) {
        add(
          fam(c),
          'nat',
          'POSTROUTING',
          ['-d', c.networkText, '-j', natChain],
          'Kilo: jump to KILO-NAT chain',
          'prepend',
        );
      }
    }
  }
  // Every iptables-restore and iptables-save costs time in proportion to the whole table, so sets
  // of sources and destinations go in as their fewest prefixes: contiguous pod CIDRs and WireGuard
  // IPs collapse, and the matched addresses stay exactly the same.
  for (const c of aggregate(allowedIPsOf(t.peers))) {
    add(fam(c), 'nat', 'POSTROUTING', ['-s', c.networkText, '-j', natChain], 'Kilo: jump to KILO-NAT chain', 'prepend');
  }
  // One group per comment, so `iptables -S` still says why an address is not masqueraded; an
  // address an earlier group covers is left out of the later ones (Kilo writes the WireGuard /32
  // twice, as itself and as an allowed IP).
  const returns: [comment: string, destinations: Cidr[]][] = [
    [
      'Kilo: do not NAT packets destined for WireGuard IPs',
      t.segments.flatMap((s) => s.wireGuardIPs.map((ip) => ip.toHostCidr())),
    ],
    ['Kilo: do not NAT packets destined for known IPs', allowedIPsOf(t.segments)],
    ['Kilo: do not NAT packets destined for peers', allowedIPsOf(t.peers)],
    ['Kilo: do not NAT packets destined for service CIDRs', options.serviceCIDRs],
  ];
  const returned: Cidr[] = [];
  for (const [comment, destinations] of returns) {
    const earlier = new PrefixSet(returned);
    for (const c of aggregate(destinations, earlier)) {
      add(fam(c), 'nat', natChain, ['-d', c.networkText, '-j', 'RETURN'], comment);
      returned.push(c);
    }
  }
  add(4, 'nat', natChain, ['-j', 'MASQUERADE'], 'Kilo: NAT remaining packets');
  add(6, 'nat', natChain, ['-j', 'MASQUERADE'], 'Kilo: NAT remaining packets');

  if (enc.acceptsIPIP) {
    fw.chains.push({ family: 4, table: 'filter', name: ipipChain }, { family: 6, table: 'filter', name: ipipChain });
    for (const family of [4, 6] as const) {
      add(family, 'filter', 'INPUT', ['-p', 'ipencap', '-j', ipipChain], 'Kilo: jump to IPIP chain');
    }
    // Kilo's upstream list is empty in cross mode, which drops all IPIP inside a location:
    // accept exactly the group members that route to this node in the clear.
    const group = groupSegments(t);
    for (let i = 0; i < group.length; i++) {
      for (let j = 0; j < group[i]!.nodes.length; j++) {
        const n = group[i]!.nodes[j]!;
        if (n === self || n.internalIPs.length === 0) continue;
        for (const c of enc.ipipSourcesOf(n))
          add(fam(c), 'filter', ipipChain, ['-s', c.networkText, '-j', 'ACCEPT'], 'Kilo: allow IPIP traffic');
      }
    }
    for (const family of [4, 6] as const) {
      add(family, 'filter', 'INPUT', ['-p', 'ipencap', '-j', 'DROP'], 'Kilo: reject other IPIP traffic');
    }
  }
  return fw;
}

/**
 * Every allowed IP of the segments or Peers, in order. Not flatMap, nor for-of: once per process
 * over thousands of segments, before V8 optimises it, both cost an allocation or more per element.
 */
function allowedIPsOf(list: readonly { allowedIPs: readonly Cidr[] }[]): Cidr[] {
  const out: Cidr[] = [];
  for (let i = 0; i < list.length; i++) out.push(...list[i]!.allowedIPs);
  return out;
}
