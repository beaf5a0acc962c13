import type { Granularity } from '../../../src/model/types.js';

/**
 * The lab's address plan and names (pure). Every address is chosen so that kilo-ts's discovery
 * classifies it as intended: 198.18.0.0/15 counts as public, 192.168.0.0/16 as private.
 *
 *   internet router ns   198.18.L.254/24 per location, 198.18.0.254/24 to the API server,
 *                        198.18.200.254/24 to the Peer; no route to any private or pod range
 *   location L           LAN 192.168.L.0/24 (a bridge in its own namespace)
 *   node i of location L lan0 192.168.L.(10+i)/24, pub0 198.18.L.(10+i)/24 (none behind NAT)
 *   NAT gateway          192.168.L.1 on the LAN, 198.18.L.1 public, masquerading
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
}

export interface LabNode {
  name: string;
  location: number;
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
}

export const apiAddress = '198.18.0.1';
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

/** Node i of location L, numbered k overall (numbers are never reused within one lab). */
export function labNode(prefix: string, location: number, index: number, k: number, nat: boolean): LabNode {
  if (location < 1 || location > 99) throw new RangeError(`location ${location}: want 1 to 99`);
  if (index < 1 || index > 200) throw new RangeError(`node index ${index}: want 1 to 200`);
  if (k < 1 || k > 255) throw new RangeError(`node number ${k}: want 1 to 255 (pod CIDR 10.42.K.0/24)`);
  const name = `loc${location}-n${index}`;
  return {
    name,
    location,
    index,
    k,
    ns: `${prefix}${name}`,
    podNs: `${prefix}${name}-pod`,
    lanIP: `192.168.${location}.${10 + index}`,
    publicIP: nat ? null : `198.18.${location}.${10 + index}`,
    podCIDR: `10.42.${k}.0/24`,
    podIP: `10.42.${k}.2`,
    podGateway: `10.42.${k}.1`,
  };
}

/** The nodes `up` creates: locations × nodes, numbered in order. */
export function initialNodes(o: LabOptions): LabNode[] {
  const out: LabNode[] = [];
  for (let l = 1; l <= o.locations; l++) {
    for (let i = 1; i <= o.nodesPerLocation; i++)
      out.push(labNode(o.prefix, l, i, out.length + 1, o.natLocation === l));
  }
  return out;
}
