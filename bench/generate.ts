import { generateKeyPairSync } from 'node:crypto';
import type { KubeObject } from '../src/model/parse.js';

/** Deterministic-enough public keys: real X25519 keys, so parsing does real work. */
export function publicKey(): string {
  const { publicKey } = generateKeyPairSync('x25519');
  return publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('base64');
}

/**
 * A cross-mesh cluster: `nodes` nodes spread over `locations` locations, each location one
 * private LAN, every node with a public endpoint; `peers` Peers. Pod CIDRs from 10.42/16 up.
 */
export function generateCluster(
  nodes: number,
  locations: number,
  peers: number,
  lastSeen = 1_764_662_400,
): KubeObject[] {
  const items: KubeObject[] = [];
  for (let i = 0; i < nodes; i++) {
    const loc = i % locations;
    const n = Math.floor(i / locations) + 1;
    items.push({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: `node-${String(i).padStart(5, '0')}`,
        labels: { 'topology.kubernetes.io/region': `region-${loc}` },
        annotations: {
          'kilo.squat.ai/key': publicKey(),
          'kilo.squat.ai/endpoint': `100.${64 + (i >> 16)}.${(i >> 8) & 0xff}.${i & 0xff}:51820`,
          'kilo.squat.ai/internal-ip': `172.${16 + (loc >> 4)}.${((loc & 0xf) << 4) | (n >> 8)}.${n & 0xff}/20`,
          'kilo.squat.ai/last-seen': String(lastSeen),
          'kilo.squat.ai/granularity': 'cross',
        },
      },
      spec: { podCIDR: `10.${42 + (i >> 8)}.${i & 0xff}.0/24` },
    });
  }
  for (let p = 0; p < peers; p++) {
    items.push({
      apiVersion: 'kilo.squat.ai/v1alpha1',
      kind: 'Peer',
      metadata: { name: `peer-${p}` },
      spec: { allowedIPs: [`10.5.${p}.1/32`], publicKey: publicKey(), persistentKeepalive: 10 },
    });
  }
  return items;
}

/**
 * The same cluster made dual-stack (docs/dual-stack.md): every node with an IPv6 pod CIDR beside its
 * IPv4 one (spec.podCIDRs), an IPv6 internal IP and endpoint in the -ipv6 annotations, and every
 * Peer with an IPv6 allowed IP too. Plan it with `--subnet 10.4.0.0/16,fd4b::/64`. The IPv6 pod
 * CIDRs are consecutive /64s of fd42::/48, as kube-controller-manager hands them out (and as the
 * IPv4 ones are consecutive /24s): /64s 2^16 apart, as this once made, aggregate into nothing, and
 * the IPv6 firewall held a rule per node where IPv4's held a few.
 */
export function dualStack(items: KubeObject[]): KubeObject[] {
  return items.map((o, i) => {
    const hex = i.toString(16);
    if (o.kind === 'Peer') {
      const spec = o.spec as { allowedIPs: string[] };
      return { ...o, spec: { ...spec, allowedIPs: [...spec.allowedIPs, `fd05::${hex}/128`] } };
    }
    const a = o.metadata!.annotations!;
    const v4 = a['kilo.squat.ai/internal-ip']!.split('/')[0]!.split('.').map(Number);
    return {
      ...o,
      metadata: {
        ...o.metadata,
        annotations: {
          ...a,
          'kilo.squat.ai/internal-ip-ipv6': `fd10:${v4[1]!.toString(16)}:${v4[2]!.toString(16)}::${v4[3]!.toString(16)}/64`,
          'kilo.squat.ai/endpoint-ipv6': `[2001:db8::${hex}]:51820`,
        },
      },
      spec: { podCIDRs: [(o.spec as { podCIDR: string }).podCIDR, i === 0 ? 'fd42::/64' : `fd42:0:0:${hex}::/64`] },
    };
  });
}
