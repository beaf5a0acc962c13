import type { Granularity } from '../../../src/model/types.js';
import { nodeIPv6, type IpFamily, type NodeIPv6 } from './families.js';

/**
 * The lab's address plan and names (pure). Every address is chosen so that kilo-ts's discovery
 * classifies it as intended: 198.18.0.0/15 counts as public, 192.168.0.0/16 as private.
 *
 *   internet router ns   198.18.L.254/24 per location, 198.18.0.254/24 to the API server,
 *                        198.18.200.254/24 to the Peer; no route to any private or pod range
 *   location L           LAN 192.168.L.0/24 (a bridge in its own namespace)
 *   node i of location L lan0 192.168.L.(10+i)/24, pub0 198.18.L.(10+i)/24 (none behind NAT)
 *   NAT gateway          192.168.L.1 on the LAN, 198.18.L.1 public, masquerading (symmetric:
 *                        a random source port per destination, only replies let in)
 *   pod of node K        10.42.K.2/24 (eth0 in the pod ns), 10.42.K.1 on the node's kube-bridge
 *   Peer                 198.18.200.10/24 public, 10.5.0.1/32 its allowed IP
 *   API server           198.18.0.1:6443 (its own namespace), and a Unix socket for the lab
 */
export interface LabOptions {
  locations: number;
  nodesPerLocation: number;
  granularity: Granularity;
  /** 1-based location behind NAT, or null. */
  natLocation: number | null;
  /**
   * 1-based locations behind a symmetric NAT (a new source port for each destination), so that
   * WireGuard hole punching between two of them fails (`kg lab up --symmetric-nat-location`).
   */
  symmetricNatLocations?: number[];
  peer: boolean;
  /** Prefix of every namespace name: keeps labs (and other work) apart. */
  prefix: string;
  /**
   * Nodes whose agent is Kilo's own `kg` (mixed clusters): node name → path of the binary. The
   * others run kilo-ts. Changed by `Lab.setKiloAgent` for the node's next start.
   */
  kiloAgents?: Record<string, string>;
  /** Extra flags of every kilo-ts agent from the start (`--firewall=nftables`); restartAgents changes them. */
  agentFlags?: string[];
  /** Which cluster of a multi-cluster lab this is (default 1): its ranges are clusterPlan(cluster). */
  cluster?: number;
  /** Cluster 2 and on: the prefix of cluster 1, whose internet router they share (they build none). */
  internetPrefix?: string;
  /** The addresses of pods, LANs and uplinks (default ipv4); IPv6's plan is families.ts. */
  ipFamily?: IpFamily;
  /** Under `dual`: the 1-based location with only IPv6 on its LAN and uplink (its pods keep both), or null. */
  ipv6OnlyLocation?: number | null;
}

/**
 * The ranges of cluster C of a lab (`kg lab up --clusters 2`), all disjoint between clusters so
 * that Kilo's multi-cluster procedure can route them (docs/multi-cluster.md). Cluster 1 is the
 * one-cluster lab unchanged; cluster 2's locations are sites 101.. (LAN 192.168.101.0/24, public
 * 198.18.101.0/24), its names start with `c2-`.
 */
export interface ClusterPlan {
  cluster: number;
  /** Prefix of node names (and of the cluster's namespace names after the lab's prefix). */
  tag: string;
  /** Location L is site siteOffset + L: its LAN 192.168.S.0/24, its public subnet 198.18.S.0/24. */
  siteOffset: number;
  /** Second octet of the pod range 10.X.0.0/16: node K has 10.X.K.0/24. */
  podOctet: number;
  podRange: string;
  serviceCidr: string;
  wireguardSubnet: string;
  apiAddress: string;
  /** The internet router's address on the API server's subnet, and its interface there. */
  apiGateway: string;
  apiRouterIf: string;
}

export const maxClusters = 2;

export function clusterPlan(cluster = 1): ClusterPlan {
  if (!Number.isInteger(cluster) || cluster < 1 || cluster > maxClusters)
    throw new RangeError(`cluster ${cluster}: want 1 to ${maxClusters}`);
  const c = cluster - 1;
  const siteOffset = 100 * c;
  const podOctet = 42 + 10 * c;
  return {
    cluster,
    tag: c === 0 ? '' : `c${cluster}-`,
    siteOffset,
    podOctet,
    podRange: `10.${podOctet}.0.0/16`,
    serviceCidr: `10.${podOctet + 1}.0.0/16`,
    wireguardSubnet: `10.${4 + 10 * c}.0.0/16`,
    apiAddress: `198.18.${siteOffset}.1`,
    apiGateway: `198.18.${siteOffset}.254`,
    apiRouterIf: c === 0 ? 'api' : `api${cluster}`,
  };
}

export interface LabNode {
  name: string;
  location: number;
  /** The location's site number (clusterPlan): its LAN 192.168.S.0/24 and public 198.18.S.0/24. */
  site: number;
  /** 1-based index in the location. */
  index: number;
  /** Global 1-based number: the pod CIDR is 10.42.K.0/24. */
  k: number;
  ns: string;
  podNs: string;
  lanIP: string;
  /** null behind NAT. */
  publicIP: string | null;
  podCIDR: string;
  podIP: string;
  podGateway: string;
  /**
   * Under `--ip-family ipv6|dual`: the node's IPv6 addresses. In an IPv6 lab the fields above hold
   * the same IPv6 values; on a dual-stack node they keep the IPv4 ones.
   */
  ipv6?: NodeIPv6;
  /** No IPv4 on LAN and uplink (an IPv6 lab, the --ipv6-only-location): lanIP and publicIP are IPv6. */
  ipv6Underlay?: boolean;
}

export const apiAddress = clusterPlan(1).apiAddress;
export const apiPort = 6443;
export const peerPublicIP = '198.18.200.10';
export const peerAllowedIP = '10.5.0.1/32';
export const peerName = 'lab-peer';
export const peerKeepaliveSeconds = 5;
export const natKeepaliveSeconds = 5;
/** The label kilo-ts (and Kilo) read the location from by default. */
export const locationLabel = 'topology.kubernetes.io/region';

export const locationName = (l: number) => `loc${l}`;
export const lanNs = (prefix: string, l: number) => `${prefix}lan${l}`;
export const gatewayNs = (prefix: string, l: number) => `${prefix}gw${l}`;
export const routerNs = (prefix: string) => `${prefix}inet`;
export const apiNs = (prefix: string) => `${prefix}api`;
export const peerNs = (prefix: string) => `${prefix}peer`;

/**
 * Node i of location L, numbered k overall (numbers are never reused within one lab), in cluster
 * `cluster` of the lab (its namespaces' prefix is `prefix`).
 */
export function labNode(
  prefix: string,
  location: number,
  index: number,
  k: number,
  nat: boolean,
  cluster = 1,
  family: { ipFamily?: IpFamily; ipv6OnlyLocation?: number | null } = {},
): LabNode {
  if (location < 1 || location > 99) throw new RangeError(`location ${location}: want 1 to 99`);
  if (index < 1 || index > 200) throw new RangeError(`node index ${index}: want 1 to 200`);
  const plan = clusterPlan(cluster);
  const pod = plan.podOctet;
  if (k < 1 || k > 255) throw new RangeError(`node number ${k}: want 1 to 255 (pod CIDR 10.${pod}.K.0/24)`);
  const site = plan.siteOffset + location;
  const short = `loc${location}-n${index}`;
  const node: LabNode = {
    name: `${plan.tag}${short}`,
    location,
    site,
    index,
    k,
    ns: `${prefix}${short}`,
    podNs: `${prefix}${short}-pod`,
    lanIP: `192.168.${site}.${10 + index}`,
    publicIP: nat ? null : `198.18.${site}.${10 + index}`,
    podCIDR: `10.${pod}.${k}.0/24`,
    podIP: `10.${pod}.${k}.2`,
    podGateway: `10.${pod}.${k}.1`,
  };
  return withIPv6(node, pod, family.ipFamily ?? 'ipv4', family.ipv6OnlyLocation === location, nat);
}

/** The node with its IPv6 addresses: beside the IPv4 ones (dual), or instead of them (ipv6, IPv6-only location). */
function withIPv6(n: LabNode, podOctet: number, family: IpFamily, ipv6OnlyLocation: boolean, nat: boolean): LabNode {
  if (family === 'ipv4') return n;
  const ipv6 = nodeIPv6(n.site, n.index, podOctet, n.k, nat);
  const underlay = family === 'ipv6' || ipv6OnlyLocation;
  const out: LabNode = { ...n, ipv6 };
  if (underlay) Object.assign(out, { ipv6Underlay: true, lanIP: ipv6.lanIP, publicIP: nat ? null : ipv6.publicIP });
  if (family === 'ipv6') Object.assign(out, { podCIDR: ipv6.podCIDR, podIP: ipv6.podIP, podGateway: ipv6.podGateway });
  return out;
}

/** The nodes `up` creates: locations × nodes, numbered in order. */
export function initialNodes(o: LabOptions): LabNode[] {
  const out: LabNode[] = [];
  for (let l = 1; l <= o.locations; l++) {
    for (let i = 1; i <= o.nodesPerLocation; i++)
      out.push(labNode(o.prefix, l, i, out.length + 1, natOf(o, l) !== null, o.cluster, o));
  }
  return out;
}

/** How location L reaches the internet: through a NAT gateway ('nat'), a symmetric one, or directly (null). */
export type NatKind = 'nat' | 'symmetric';

export function natOf(o: Pick<LabOptions, 'natLocation' | 'symmetricNatLocations'>, l: number): NatKind | null {
  if (o.symmetricNatLocations?.includes(l)) return 'symmetric';
  return o.natLocation === l ? 'nat' : null;
}

/** The prefix of the namespace of the internet router a cluster uses (cluster 1's own). */
export const internetPrefix = (o: LabOptions): string => o.internetPrefix ?? o.prefix;
