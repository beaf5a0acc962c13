/**
 * Clusters described as node specs, for the WireGuard IP allocation tests: the map of segment →
 * address as a node computes it, and "publishing" it as the agents do in `stable` mode (every
 * member of a segment writes its segment's address into kilo.squat.ai/wireguard-ip).
 */
import { topologyOf } from '../../src/mesh/compute.js';
import type { MeshOptions } from '../../src/mesh/options.js';
import type { Topology } from '../../src/mesh/topology.js';
import { Annotation } from '../../src/model/annotations.js';
import { parseCluster, type KubeObject } from '../../src/model/parse.js';
import { meshOptions, node, NOW, type NodeSpec } from './cluster.js';

export type Specs = ReadonlyMap<string, NodeSpec>;

let pod = 0;
/** A ready node's spec in `location` with a fresh internal IP, endpoint and pod CIDR. */
export function ready(location: string, extra: NodeSpec = {}): NodeSpec {
  const i = ++pod;
  const [hi, lo] = [(i >> 8) & 255, i & 255];
  return {
    location,
    internalIP: `10.1.${hi}.${lo}/16`,
    endpoint: `198.51.${hi}.${lo}:51820`,
    podCIDR: `10.${100 + (hi & 63)}.${lo}.0/24`,
    ...extra,
  };
}

export function objectsOf(specs: Specs): KubeObject[] {
  return [...specs].map(([name, spec]) => node(name, spec));
}

/** The topology as `host` sees it (the cluster may hold invalid objects: they are left out). */
export function topologyOfSpecs(
  specs: Specs | readonly KubeObject[],
  host: string,
  options: Partial<MeshOptions> = {},
  now = NOW,
): Topology {
  const objects = Array.isArray(specs) ? (specs as readonly KubeObject[]) : objectsOf(specs as Specs);
  return topologyOf(parseCluster(objects), host, meshOptions(options), now);
}

/** Segment key → its WireGuard IP, as `host` computes it. */
export function addressMap(t: Topology): Map<string, string> {
  return new Map(t.segments.map((s) => [s.key, s.wireGuardIPs[0]!.text]));
}

/** Node name → the address of its segment, as `host` computes it. */
export function nodeAddresses(t: Topology): Map<string, string> {
  const out = new Map<string, string>();
  for (const s of t.segments) for (const n of s.nodes) out.set(n.name, s.wireGuardIPs[0]!.text);
  return out;
}

/** The specs after every ready node's agent published its segment's address (stable mode). */
export function published(specs: Specs, t: Topology): Map<string, NodeSpec> {
  const mine = nodeAddresses(t);
  const prefix = t.subnet.prefix;
  return new Map(
    [...specs].map(([name, spec]) => {
      const ip = mine.get(name);
      return [name, ip === undefined ? spec : { ...spec, wireGuardIP: `${ip}/${prefix}` }];
    }),
  );
}

/** The force-wireguard-ip annotation, as an operator writes it. */
export function forced(ip: string): NodeSpec {
  return { annotations: { [Annotation.forceWireGuardIP]: ip } };
}

/** A change to a cluster of the property tests: a node joins, is deleted, or stops checking in. */
export type ClusterChange =
  { kind: 'add'; name: string; location: string } | { kind: 'delete' | 'stale'; pick: number };

/**
 * Applies `c` to `specs` in place: a new node `new-<name>`, or the deletion or going stale of one
 * of the live nodes picked by `c.pick`. False when it does not apply (the name is taken, or it would
 * leave no live node).
 */
export function applyChange(specs: Map<string, NodeSpec>, c: ClusterChange): boolean {
  if (c.kind === 'add') {
    const name = `new-${c.name}`;
    if (specs.has(name)) return false;
    specs.set(name, ready(c.location));
    return true;
  }
  const live = [...specs.keys()].filter((n) => specs.get(n)!.lastSeen === undefined);
  if (live.length < 2) return false;
  const victim = live[c.pick % live.length]!;
  if (c.kind === 'delete') specs.delete(victim);
  else specs.set(victim, { ...specs.get(victim)!, lastSeen: NOW - 600 });
  return true;
}
