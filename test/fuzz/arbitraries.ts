/**
 * fast-check generators of clusters: small pools of names, keys, prefixes and locations, so that
 * collisions (one key twice, nested pod CIDRs, a Peer on a node's addresses) are frequent; and
 * mutations that put any JSON value anywhere in an object.
 */
import fc from 'fast-check';
import type { KubeObject } from '../../src/model/parse.js';
import { NOW, node, peer, wgKey } from '../helpers/cluster.js';

const names = ['a', 'b', 'c', 'd', 'e', 'f'];
const prefixes = [
  '10.2.0.0/16',
  '10.2.1.0/24',
  '10.2.2.0/24',
  '10.2.3.0/24',
  '10.4.0.0/24', // inside the default WireGuard subnet
  '10.5.0.1/32',
  '10.5.0.0/24',
  '10.1.0.1/32',
  '192.168.0.0/16',
  'fd00:2::/64',
  '0.0.0.0/0',
];
const internalIPs = ['10.1.0.1/24', '10.1.0.2/24', '10.1.1.3/24', '10.2.1.7/24', '10.4.0.2/16', 'fd00::5/64'];
const keys = ['k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7'].map(wgKey);

const nodeArb = fc.record({
  name: fc.constantFrom(...names),
  location: fc.constantFrom('eu', 'us', ''),
  internalIP: fc.option(fc.constantFrom(...internalIPs), { nil: undefined }),
  endpoint: fc.constantFrom('198.51.100.1:51820', '198.51.100.2:51821', '10.1.0.2:51820', 'vpn.example.com:51820'),
  podCIDR: fc.constantFrom(...prefixes),
  key: fc.constantFrom(...keys),
  leader: fc.boolean(),
  allowedLocationIPs: fc.subarray(['192.168.5.0/24', '10.2.1.0/24', '172.16.0.0/12']),
  lastSeen: fc.constantFrom(NOW, NOW - 10, NOW - 120),
});

const peerArb = fc.record({
  name: fc.constantFrom('p1', 'p2', 'p3', 'p4'),
  allowedIPs: fc.subarray(prefixes, { minLength: 1 }),
  publicKey: fc.constantFrom(...keys),
  keepalive: fc.constantFrom(0, 25),
});

/** A cluster of valid-looking objects, colliding often. */
export const clusterArb: fc.Arbitrary<KubeObject[]> = fc
  .tuple(fc.array(nodeArb, { minLength: 1, maxLength: 7 }), fc.array(peerArb, { maxLength: 4 }))
  .map(([ns, ps]) => [...ns.map((n) => node(n.name, n)), ...ps.map((p) => peer(p.name, p))]);

/** Any JSON-ish value, biased to the wrong types the issue found (numbers, null, nesting). */
const junk = fc.oneof(
  fc.constantFrom(5, 0, null, false, true, '', '0.0.0.0/0', '::/0', 'x'.repeat(300), '\u0000', [], {}, ['x']),
  fc.jsonValue({ maxDepth: 3 }),
);

/**
 * A path into an object and a value to put there. Copies only the objects along the path (the
 * rest is shared, never written), so a value nested 50,000 deep costs nothing to copy.
 */
function mutate(obj: unknown, path: string[], value: unknown): unknown {
  if (typeof obj !== 'object' || obj === null) return obj;
  const shallow = (o: object) => (Array.isArray(o) ? [...(o as unknown[])] : { ...o }) as Record<string, unknown>;
  const copy = shallow(obj);
  let at: Record<string, unknown> = copy;
  for (const p of path.slice(0, -1)) {
    const next = at[p];
    at[p] = typeof next === 'object' && next !== null ? shallow(next) : {};
    at = at[p] as Record<string, unknown>;
  }
  at[path[path.length - 1]!] = value;
  return copy;
}

const paths: string[][] = [
  ['apiVersion'],
  ['kind'],
  ['metadata'],
  ['metadata', 'name'],
  ['metadata', 'annotations'],
  ['metadata', 'labels'],
  ['metadata', 'labels', 'topology.kubernetes.io/region'],
  ['spec'],
  ['spec', 'podCIDR'],
  ['spec', 'allowedIPs'],
  ['spec', 'publicKey'],
  ['spec', 'endpoint'],
  ['spec', 'endpoint', 'port'],
  ['spec', 'endpoint', 'dnsOrIP'],
  ['spec', 'persistentKeepalive'],
  ['spec', 'presharedKey'],
  ...[
    'location',
    'force-internal-ip',
    'internal-ip',
    'allowed-location-ips',
    'cilium-internal-ip',
    'key',
    'endpoint',
    'force-endpoint',
    'last-seen',
    'discovered-endpoints',
    'persistent-keepalive',
    'granularity',
    'leader',
  ].map((a) => ['metadata', 'annotations', `kilo.squat.ai/${a}`]),
];

/** A cluster with some of its objects broken: any value at any path, or the object replaced by junk. */
export const mutatedClusterArb: fc.Arbitrary<unknown[]> = fc
  .tuple(
    clusterArb,
    fc.array(fc.tuple(fc.nat(), fc.constantFrom(...paths), junk), { minLength: 1, maxLength: 4 }),
    fc.boolean(),
  )
  .map(([objects, mutations, whole]) => {
    const out: unknown[] = [...objects];
    for (const [i, path, value] of mutations) {
      const k = i % out.length;
      out[k] = whole && i % 7 === 0 ? value : mutate(out[k], path, value);
    }
    return out;
  });

/** Arrays nested up to 50,000 deep around an allowed IP: the depth the issue broke the webhook with. */
const deeplyNested = fc.integer({ min: 1, max: 50_000 }).map((depth) => {
  let v: unknown = '10.5.0.1/32';
  for (let i = 0; i < depth; i++) v = [v];
  return v;
});

const reviewPaths: string[][] = [
  ['apiVersion'],
  ['kind'],
  ['request'],
  ['request', 'uid'],
  ['request', 'operation'],
  ['request', 'object'],
  ['request', 'object', 'spec', 'allowedIPs', '0'],
  ['request', 'object', 'spec', 'endpoint', 'dnsOrIP', 'dns'],
  ['request', 'object', 'spec', 'endpoint', 'dnsOrIP', 'ip'],
  ...paths.filter((p) => p[1] !== 'annotations' || p.length < 3).map((p) => ['request', 'object', ...p]),
];

/** An AdmissionReview v1 of a generated Peer, as the API server sends it, with broken values anywhere. */
export const admissionReviewArb: fc.Arbitrary<unknown> = fc
  .tuple(
    peerArb,
    fc.constantFrom('CREATE', 'UPDATE'),
    fc.array(
      fc.tuple(
        fc.constantFrom(...reviewPaths),
        fc.oneof({ weight: 9, arbitrary: junk }, { weight: 1, arbitrary: deeplyNested }),
      ),
      {
        maxLength: 3,
      },
    ),
  )
  .map(([p, operation, mutations]) => {
    let review: unknown = {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: { uid: `uid-${p.name}`, operation, object: peer(p.name, p) },
    };
    for (const [path, value] of mutations) review = mutate(review, path, value);
    return review;
  });

export { junk, mutate };
