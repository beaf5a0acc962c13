import { planOf } from '../../src/mesh/compute.js';
import { defaultMeshOptions, type MeshOptions } from '../../src/mesh/options.js';
import type { Firewall, Plan } from '../../src/mesh/types.js';
import { parseCluster, type KubeObject } from '../../src/model/parse.js';
import { Cidr } from '../../src/net/cidr.js';

const now = 1_764_662_400;

/** A valid-looking WireGuard public key, distinct per index. */
function key(i: number): string {
  return Buffer.alloc(32, i + 1).toString('base64');
}

function node(i: number, location: string, internalIP: string | null, podCIDR: string): KubeObject {
  const annotations: Record<string, string> = {
    'kilo.squat.ai/key': key(i),
    'kilo.squat.ai/endpoint': `203.0.113.${i + 1}:51820`,
    'kilo.squat.ai/last-seen': String(now),
    'kilo.squat.ai/location': location,
  };
  if (internalIP) annotations['kilo.squat.ai/internal-ip'] = internalIP;
  return { apiVersion: 'v1', kind: 'Node', metadata: { name: `node-${i}`, annotations }, spec: { podCIDR } };
}

/** Three nodes sharing a LAN in location "a", one in "b"; a Peer with IPv4 and IPv6 allowed IPs. */
export function clusterObjects(options: { withoutNode?: number } = {}): KubeObject[] {
  const nodes = [
    node(0, 'a', '192.168.1.10/24', '10.42.0.0/24'),
    node(1, 'a', '192.168.1.11/24', '10.42.1.0/24'),
    node(2, 'a', '192.168.1.12/24', '10.42.2.0/24'),
    node(3, 'b', '192.168.2.10/24', '10.42.3.0/24'),
  ].filter((_, i) => i !== options.withoutNode);
  const peer: KubeObject = {
    apiVersion: 'kilo.squat.ai/v1alpha1',
    kind: 'Peer',
    metadata: { name: 'laptop' },
    spec: { allowedIPs: ['10.5.0.1/32', 'fd05::1/128'], publicKey: key(99), persistentKeepalive: 10 },
  };
  return [...nodes, peer];
}

const baseOptions: MeshOptions = {
  ...defaultMeshOptions,
  granularity: 'location',
  encapsulate: 'always',
  local: true,
  cni: true,
  iptablesForwardRules: true,
  serviceCIDRs: [Cidr.parse('10.43.0.0/16'), Cidr.parse('fd43::/112')],
};

/** The whole plan of `hostname`, with the firewall tests' options. */
export function planWith(objects: KubeObject[], options: Partial<MeshOptions> = {}, hostname = 'node-0'): Plan {
  const cluster = parseCluster(objects);
  if (cluster.errors.length) throw new Error(cluster.errors.map((e) => e.message).join('; '));
  return planOf(cluster, hostname, { ...baseOptions, ...options }, now);
}

export function firewallOf(objects: KubeObject[], options: Partial<MeshOptions> = {}, hostname = 'node-0'): Firewall {
  return planWith(objects, options, hostname).firewall;
}

/** Plan A: encapsulation always (KILO-IPIP exists), all four nodes, the Peer. */
export const planA = (): Firewall => firewallOf(clusterObjects());
/** Plan B: encapsulation never (no KILO-IPIP), node-2 gone. */
export const planB = (): Firewall => firewallOf(clusterObjects({ withoutNode: 2 }), { encapsulate: 'never' });
