/**
 * Builders for Kubernetes Node and Peer objects as Kilo annotates them, and shortcuts from
 * objects to a topology or a plan. Tests describe a cluster in a few lines and stay readable.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { planOf, topologyOf } from '../../src/mesh/compute.js';
import { defaultMeshOptions, type MeshOptions } from '../../src/mesh/options.js';
import type { Topology } from '../../src/mesh/topology.js';
import type { Plan } from '../../src/mesh/types.js';
import { Annotation } from '../../src/model/annotations.js';
import { parseCluster, parseNode, parsePeer, type KubeObject, type ParsedCluster } from '../../src/model/parse.js';
import type { KiloNode, KiloPeer } from '../../src/model/types.js';

/** A fixed "now" (unix seconds) for every built object, so no test depends on the clock. */
export const NOW = 1_764_662_400;

/** A valid WireGuard public key derived from a seed: base64 of 32 bytes, the same every run. */
export function wgKey(seed: string): string {
  return createHash('sha256').update(`kilo-ts test key ${seed}`).digest('base64');
}

export interface NodeSpec {
  /** The kilo.squat.ai/location annotation; absent when undefined. */
  location?: string;
  /** Labels, e.g. the topology label. */
  labels?: Record<string, string>;
  /** kilo.squat.ai/internal-ip (detected), as written. */
  internalIP?: string;
  forceInternalIP?: string;
  /** kilo.squat.ai/endpoint (detected), as written. */
  endpoint?: string;
  forceEndpoint?: string;
  /** Public key; defaults to wgKey(name); null leaves the annotation out. */
  key?: string | null;
  /** spec.podCIDR. */
  podCIDR?: string;
  /** spec.podCIDRs (any value, to test bad ones). */
  podCIDRs?: unknown;
  keepalive?: number | string;
  /** true → the annotation with value "true"; a string → that value. */
  leader?: boolean | string;
  allowedLocationIPs?: string | string[];
  /** Object (serialised as Kilo writes it) or raw annotation text. */
  discovered?: Record<string, { IP: string; Port: number; Zone?: string }> | string;
  /** Unix seconds; defaults to NOW; null leaves the annotation out. */
  lastSeen?: number | string | null;
  wireGuardIP?: string;
  granularity?: string;
  /** Extra or overriding annotations, written last. */
  annotations?: Record<string, string>;
}

/** A core v1 Node carrying Kilo's annotations. */
export function node(name: string, spec: NodeSpec = {}): KubeObject {
  const a: Record<string, string> = {};
  const set = (k: string, v: string | undefined) => {
    if (v !== undefined) a[k] = v;
  };
  set(Annotation.location, spec.location);
  set(Annotation.internalIP, spec.internalIP);
  set(Annotation.forceInternalIP, spec.forceInternalIP);
  set(Annotation.endpoint, spec.endpoint);
  set(Annotation.forceEndpoint, spec.forceEndpoint);
  const key = spec.key === undefined ? wgKey(name) : spec.key;
  if (key !== null) a[Annotation.key] = key;
  set(Annotation.persistentKeepalive, spec.keepalive === undefined ? undefined : String(spec.keepalive));
  if (spec.leader !== undefined && spec.leader !== false)
    a[Annotation.leader] = spec.leader === true ? 'true' : spec.leader;
  const alips = spec.allowedLocationIPs;
  set(Annotation.allowedLocationIPs, Array.isArray(alips) ? alips.join(',') : alips);
  const de = spec.discovered;
  set(
    Annotation.discoveredEndpoints,
    typeof de === 'string' ? de : de === undefined ? undefined : JSON.stringify(withZone(de)),
  );
  const lastSeen = spec.lastSeen === undefined ? NOW : spec.lastSeen;
  if (lastSeen !== null) a[Annotation.lastSeen] = String(lastSeen);
  set(Annotation.wireGuardIP, spec.wireGuardIP);
  set(Annotation.granularity, spec.granularity);
  Object.assign(a, spec.annotations ?? {});
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, annotations: a, labels: { ...(spec.labels ?? {}) } },
    spec: {
      ...(spec.podCIDR === undefined ? {} : { podCIDR: spec.podCIDR }),
      ...(spec.podCIDRs === undefined ? {} : { podCIDRs: spec.podCIDRs }),
    },
  };
}

function withZone(de: Record<string, { IP: string; Port: number; Zone?: string }>) {
  return Object.fromEntries(Object.entries(de).map(([k, v]) => [k, { Zone: '', ...v }]));
}

export interface PeerSpec {
  allowedIPs?: unknown;
  /** Defaults to wgKey(name); null leaves the field out. */
  publicKey?: string | null;
  /** "ip:port", "dns:port", or the raw spec.endpoint object. */
  endpoint?: string | Record<string, unknown>;
  keepalive?: number | string;
  presharedKey?: string;
}

/** A kilo.squat.ai/v1alpha1 Peer. */
export function peer(name: string, spec: PeerSpec = {}): KubeObject {
  const s: Record<string, unknown> = {};
  if (spec.allowedIPs !== undefined) s['allowedIPs'] = spec.allowedIPs;
  const key = spec.publicKey === undefined ? wgKey(name) : spec.publicKey;
  if (key !== null) s['publicKey'] = key;
  if (typeof spec.endpoint === 'string') {
    const colon = spec.endpoint.lastIndexOf(':');
    const host = spec.endpoint.slice(0, colon).replace(/^\[|\]$/g, '');
    const dnsOrIP = /^[\d.]+$/.test(host) || host.includes(':') ? { ip: host } : { dns: host };
    s['endpoint'] = { dnsOrIP, port: Number(spec.endpoint.slice(colon + 1)) };
  } else if (spec.endpoint !== undefined) {
    s['endpoint'] = spec.endpoint;
  }
  if (spec.keepalive !== undefined) s['persistentKeepalive'] = spec.keepalive;
  if (spec.presharedKey !== undefined) s['presharedKey'] = spec.presharedKey;
  return { apiVersion: 'kilo.squat.ai/v1alpha1', kind: 'Peer', metadata: { name }, spec: s };
}

/** Parses objects that must all be valid. */
export function parsed(objects: readonly KubeObject[]): ParsedCluster {
  const c = parseCluster(objects);
  assert.deepEqual(
    c.errors.map((e) => e.message),
    [],
    'test cluster has invalid objects',
  );
  return c;
}

export function kiloNode(name: string, spec: NodeSpec = {}): KiloNode {
  const p = parseNode(node(name, spec));
  if (!p.ok) throw new Error(p.errors.map((e) => e.message).join('; '));
  return p.value;
}

export function kiloPeer(name: string, spec: PeerSpec = {}): KiloPeer {
  const p = parsePeer(peer(name, spec));
  if (!p.ok) throw new Error(p.errors.map((e) => e.message).join('; '));
  return p.value;
}

export function meshOptions(overrides: Partial<MeshOptions> = {}): MeshOptions {
  return { ...defaultMeshOptions, ...overrides };
}

/** The topology of valid objects as `hostname` sees it at NOW. */
export function topologyFor(
  objects: readonly KubeObject[],
  hostname: string,
  overrides: Partial<MeshOptions> = {},
): Topology {
  return topologyOf(parsed(objects), hostname, meshOptions(overrides), NOW);
}

/** The plan of valid objects for `hostname` at NOW. */
export function planFor(objects: readonly KubeObject[], hostname: string, overrides: Partial<MeshOptions> = {}): Plan {
  return planOf(parsed(objects), hostname, meshOptions(overrides), NOW);
}

/** Plan routes as compact strings, e.g. "10.2.1.0/24 via 10.4.0.2 dev kilo src 10.1.0.1 onlink". */
export function routeLines(plan: Plan): string[] {
  return plan.routes.map(
    (r) =>
      `${r.dst}${r.gw ? ` via ${r.gw}` : ''} dev ${r.dev}${r.src ? ` src ${r.src}` : ''}` +
      `${r.table === 'main' ? '' : ` table ${r.table}`}${r.onlink ? ' onlink' : ''}`,
  );
}

/** Plan rules as compact strings, e.g. "from 10.2.0.0/24 to 10.1.0.2/32 lookup 1107". */
export function ruleLines(plan: Plan): string[] {
  return plan.rules.map(
    (r) =>
      `${r.iif ? `iif ${r.iif} ` : ''}${r.src ? `from ${r.src} ` : ''}${r.dst ? `to ${r.dst} ` : ''}lookup ${r.table}`,
  );
}

/** Names of the WireGuard peers in a plan, each peer's names joined by "+". */
export function peerNames(plan: Plan): string[] {
  return plan.peers.map((p) => p.names.join('+'));
}

/**
 * A small two-location cluster for plan tests:
 *   eu: eu-a (public endpoint, 10.1.0.1/24), eu-b (10.1.0.2/24), eu-c (10.1.1.3/24, another subnet)
 *   us: us-a (public endpoint port 51821, 10.8.0.1/24), us-b (10.8.0.2/24)
 *   Peer laptop: 10.5.0.1/32.
 * Location segments: location:eu = 10.4.0.1 (leader eu-a), location:us = 10.4.0.2 (leader us-a).
 */
export function twoLocations(overrides: Record<string, NodeSpec> = {}): KubeObject[] {
  const spec = (name: string, s: NodeSpec) => node(name, { ...s, ...(overrides[name] ?? {}) });
  return [
    spec('eu-a', { location: 'eu', internalIP: '10.1.0.1/24', endpoint: '198.51.100.1:51820', podCIDR: '10.2.1.0/24' }),
    spec('eu-b', { location: 'eu', internalIP: '10.1.0.2/24', endpoint: '10.1.0.2:51820', podCIDR: '10.2.2.0/24' }),
    spec('eu-c', { location: 'eu', internalIP: '10.1.1.3/24', endpoint: '10.1.1.3:51820', podCIDR: '10.2.3.0/24' }),
    spec('us-a', { location: 'us', internalIP: '10.8.0.1/24', endpoint: '198.51.100.8:51821', podCIDR: '10.2.8.0/24' }),
    spec('us-b', { location: 'us', internalIP: '10.8.0.2/24', endpoint: '10.8.0.2:51820', podCIDR: '10.2.9.0/24' }),
    peer('laptop', { allowedIPs: ['10.5.0.1/32'] }),
  ];
}

/** Sorted copy, for comparing route and rule sets whose order carries no meaning. */
export function sorted(lines: readonly string[]): string[] {
  return [...lines].sort();
}
