import type { IpFamily } from './families.js';
import {
  hasIPv6,
  ipv6Api,
  ipv6Internet,
  ipv6NatGateway,
  ipv6NodeLines,
  ipv6Peer,
  ipv6PodLines,
  ipv6Uplink,
} from './network-ipv6.js';
import {
  apiNs,
  clusterPlan,
  gatewayNs,
  lanNs,
  peerNs,
  peerPublicIP,
  routerNs,
  type LabNode,
  type NatKind,
} from './layout.js';
import { ipBatch, run, sysctl } from './sh.js';
import type { StateDir } from './state.js';

/** Kilo's CNI bridge name. */
export const podBridge = 'kube-bridge';

/**
 * The lab's wires: namespaces joined by veth pairs created directly inside them (never in the
 * host namespace, so no name there can collide), bridges for the location LANs and the
 * internet. Each namespace is recorded before anything is put in it.
 */

export function addNamespace(state: StateDir, name: string): void {
  run(['ip', 'netns', 'add', name]);
  state.record({ kind: 'netns', name });
  ipBatch(name, ['link set lo up']);
}

/** A veth pair with one end in each namespace, both up. */
function veth(a: { ns: string; name: string }, b: { ns: string; name: string }): void {
  run(['ip', 'link', 'add', a.name, 'netns', a.ns, 'type', 'veth', 'peer', 'name', b.name, 'netns', b.ns]);
  ipBatch(a.ns, [`link set ${a.name} up`]);
  ipBatch(b.ns, [`link set ${b.name} up`]);
}

const routerBridge = (l: number) => `loc${l}`;

/**
 * The internet: a router forwarding between public subnets, with no route to anything private
 * (built by cluster 1 only: the clusters of a lab share it).
 */
export function buildInternet(state: StateDir, prefix: string, family?: IpFamily): void {
  const router = routerNs(prefix);
  addNamespace(state, router);
  sysctl(router, { 'net.ipv4.ip_forward': 1 });
  if (hasIPv6(family)) ipv6Internet(router);
}

/**
 * A cluster's API server namespace on the internet (the router's, in `internetPrefix`'s lab),
 * reachable from every node (through NAT too).
 */
export function buildApiNetwork(
  state: StateDir,
  prefix: string,
  internetPrefix: string,
  cluster = 1,
  family?: IpFamily,
): void {
  const plan = clusterPlan(cluster);
  const router = routerNs(internetPrefix);
  const api = apiNs(prefix);
  addNamespace(state, api);
  veth({ ns: api, name: 'pub0' }, { ns: router, name: plan.apiRouterIf });
  ipBatch(api, [`addr add ${plan.apiAddress}/24 dev pub0`, `route add default via ${plan.apiGateway}`]);
  ipBatch(router, [`addr add ${plan.apiGateway}/24 dev ${plan.apiRouterIf}`]);
  if (hasIPv6(family)) ipv6Api(api, router, plan.apiRouterIf, plan.siteOffset);
}

/**
 * A location: its LAN (a bridge namespace), the router's public subnet, and a NAT gateway if it
 * is behind one. `site` numbers its subnets (clusterPlan); it is `l` in cluster 1.
 */
export function buildLocation(
  state: StateDir,
  prefix: string,
  l: number,
  nat: NatKind | null,
  site = l,
  internetPrefix = prefix,
  family?: IpFamily,
): void {
  const lan = lanNs(prefix, l);
  addNamespace(state, lan);
  ipBatch(lan, ['link add br0 type bridge', 'link set br0 up']);
  const router = routerNs(internetPrefix);
  ipBatch(router, [
    `link add ${routerBridge(site)} type bridge`,
    `link set ${routerBridge(site)} up`,
    `addr add 198.18.${site}.254/24 dev ${routerBridge(site)}`,
  ]);
  if (hasIPv6(family)) ipv6Uplink(router, routerBridge(site), site);
  if (!nat) return;
  const gw = gatewayNs(prefix, l);
  addNamespace(state, gw);
  sysctl(gw, { 'net.ipv4.ip_forward': 1 });
  veth({ ns: gw, name: 'lan0' }, { ns: lan, name: 'gw' });
  ipBatch(lan, ['link set gw master br0']);
  veth({ ns: gw, name: 'pub0' }, { ns: router, name: `gw${site}` });
  ipBatch(router, [`link set gw${site} master ${routerBridge(site)}`]);
  ipBatch(gw, [
    `addr add 192.168.${site}.1/24 dev lan0`,
    `addr add 198.18.${site}.1/24 dev pub0`,
    `route add default via 198.18.${site}.254`,
  ]);
  const inGw = (rule: string[]) => run(['ip', 'netns', 'exec', gw, 'iptables', ...rule]);
  if (hasIPv6(family)) ipv6NatGateway(gw, router, site);
  if (nat === 'nat') {
    inGw(['-t', 'nat', '-A', 'POSTROUTING', '-o', 'pub0', '-j', 'MASQUERADE']);
    return;
  }
  // Symmetric: each new flow (a new destination) gets a random source port, so the port a third
  // node learned for this location's node is useless to anyone else, and only replies to a flow
  // come in: two such locations cannot punch a hole to each other (docs/lab.md).
  inGw(['-t', 'nat', '-A', 'POSTROUTING', '-o', 'pub0', '-j', 'MASQUERADE', '--random-fully']);
  inGw(['-A', 'FORWARD', '-i', 'pub0', '-m', 'conntrack', '--ctstate', 'ESTABLISHED,RELATED', '-j', 'ACCEPT']);
  inGw(['-A', 'FORWARD', '-i', 'pub0', '-j', 'DROP']);
}

/**
 * A node namespace (lan0, pub0 unless behind NAT, the pod bridge) and its pod namespace. The pod
 * bridge is named `kube-bridge`, as Kilo's CNI names it: Kilo's agent skips only that name when it
 * picks its private address, so a lab node looks to it as a real Kilo node does.
 */
export function buildNode(state: StateDir, prefix: string, n: LabNode, internetPrefix = prefix): void {
  addNamespace(state, n.ns);
  sysctl(n.ns, {
    // IPv4 only: without IPv6 no router solicitation or MLD report ever crosses kilo0, so its
    // counters move only for the traffic a test sends.
    ...(n.ipv6
      ? // The node routes IPv6 as it routes IPv4: the lab sets both, as an operator does (kg sets neither, as Kilo).
        { 'net.ipv6.conf.all.forwarding': 1 }
      : { 'net.ipv6.conf.all.disable_ipv6': 1, 'net.ipv6.conf.default.disable_ipv6': 1 }),
    'net.ipv4.ip_forward': 1,
    'net.ipv4.conf.all.rp_filter': 0,
    'net.ipv4.conf.default.rp_filter': 0,
  });
  veth({ ns: n.ns, name: 'lan0' }, { ns: lanNs(prefix, n.location), name: `n${n.index}` });
  ipBatch(lanNs(prefix, n.location), [`link set n${n.index} master br0`]);
  const ipv4 = !n.ipv6Underlay;
  const lines = ipv4 ? [`addr add ${n.lanIP}/24 dev lan0`] : [];
  const site = n.site;
  if (n.publicIP) {
    const router = routerNs(internetPrefix);
    veth({ ns: n.ns, name: 'pub0' }, { ns: router, name: `l${site}n${n.index}` });
    ipBatch(router, [`link set l${site}n${n.index} master ${routerBridge(site)}`]);
    if (ipv4) lines.push(`addr add ${n.publicIP}/24 dev pub0`, `route add default via 198.18.${site}.254`);
  } else if (ipv4) {
    lines.push(`route add default via 192.168.${site}.1`);
  }
  lines.push(...ipv6NodeLines(n));
  // An IPv6 lab's pods have no IPv4 address (their podIP is the IPv6 one).
  const podIPv4 = !n.podIP.includes(':');
  const pod6 = ipv6PodLines(n, podBridge);
  addNamespace(state, n.podNs);
  veth({ ns: n.ns, name: 'veth-pod' }, { ns: n.podNs, name: 'eth0' });
  lines.push(
    `link add ${podBridge} type bridge`,
    `link set veth-pod master ${podBridge}`,
    `link set ${podBridge} up`,
    ...(podIPv4 ? [`addr add ${n.podGateway}/24 dev ${podBridge}`] : []),
    ...pod6.node,
  );
  ipBatch(n.ns, lines);
  ipBatch(n.podNs, [
    ...(podIPv4 ? [`addr add ${n.podIP}/24 dev eth0`, `route add default via ${n.podGateway}`] : []),
    ...pod6.pod,
  ]);
}

/** The Peer's namespace: only a public interface on the internet. */
export function buildPeerNetwork(state: StateDir, prefix: string, family?: IpFamily): void {
  const ns = peerNs(prefix);
  addNamespace(state, ns);
  veth({ ns, name: 'pub0' }, { ns: routerNs(prefix), name: 'peer' });
  ipBatch(routerNs(prefix), ['addr add 198.18.200.254/24 dev peer']);
  ipBatch(ns, [`addr add ${peerPublicIP}/24 dev pub0`, 'route add default via 198.18.200.254']);
  if (hasIPv6(family)) ipv6Peer(ns, routerNs(prefix));
}

/** Removes a node's namespaces (its veths go with them). */
export function removeNodeNetwork(state: StateDir, n: LabNode): void {
  for (const ns of [n.podNs, n.ns]) {
    run(['ip', 'netns', 'del', ns], { allowFail: true });
    state.forget((m) => m.kind === 'netns' && m.name === ns);
  }
}
