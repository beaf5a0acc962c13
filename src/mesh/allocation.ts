import type { Cidr, IP } from '../net/cidr.js';
import type { ByFamily } from '../net/family.js';
import type { ValidationError } from '../model/errors.js';
import type { WireGuardIPAllocation } from '../model/mesh-flags.js';
import type { Granularity, KiloNode } from '../model/types.js';
import { claimsOf, lostForce, maxSlotOf, type Claim } from './allocation-claims.js';

/**
 * Where each segment's WireGuard IPs sit in --subnet: a slot, the offset of the address from the
 * subnet's network address (1 is the first host). One slot per segment serves every family: the
 * segment's address in each family's subnet is that family's address at the same slot, so the
 * two correspond. A forced or published address becomes a slot by its offset in --subnet.
 *
 * Two rules (--wireguard-ip-allocation, docs/wireguard-ips.md):
 *   - `kilo`: Kilo's, the n-th segment in key order takes the n-th slot. A segment whose node
 *     forces an address takes that one; the others take the free slots in key order, so without a
 *     forced address the output is Kilo's, byte for byte.
 *   - `stable`: a segment keeps the address its nodes publish (kilo.squat.ai/wireguard-ip) while
 *     it is valid and no stronger claim holds it; a new segment takes the lowest free slot; the
 *     address of a segment that is gone stays held while one of its Node objects checked in within
 *     `stableGraceSeconds`.
 * Both are pure functions of the objects and the time, so every agent computes the same map.
 */
export interface PlacedSegment {
  /** `location:<name>` or `node:<name>`, in key order. */
  key: string;
  /** The segment's ready nodes (conflicts resolved): their claims count whatever their last-seen. */
  members: readonly KiloNode[];
}

/** Kilo's rule (pkg/mesh/topology.go): the n-th segment in key order takes slot n (from 1). */
export function kiloSlots(placed: readonly PlacedSegment[]): number[] {
  const slots = new Array<number>(placed.length);
  for (let i = 0; i < placed.length; i++) slots[i] = i + 1;
  return slots;
}

/**
 * How long a segment that is gone keeps its address in `stable` mode, from the newest last-seen
 * of its Node objects: a day covers a reboot, a drained node's maintenance and a night's outage;
 * holding costs one address of --subnet. A fixed value, not a flag: every agent must use the same.
 */
export const stableGraceSeconds = 24 * 3600;

export interface AllocationContext {
  mode: WireGuardIPAllocation;
  subnet: Cidr;
  /** Dual-stack: every family's subnet, `subnet`'s first (absent with one family). */
  subnets?: ByFamily<Cidr>;
  granularity: Granularity;
  /** Every valid Node object, ready or not: a node that is not ready still holds its claim for the grace period. */
  nodes: readonly KiloNode[];
  /** Unix seconds: the time readiness is judged at. */
  now: number;
}

export interface Allocation {
  /** One slot per placed segment, in the same order. */
  slots: number[];
  /** Forced addresses that could not be honoured, one per node, in a stable order. */
  problems: ValidationError[];
}

/**
 * The segment a node belongs to when it is placed (topology.ts's placeSegments): a location in
 * `location` granularity when it has an internal IP, else a segment of its own. For the claims of
 * nodes that are not placed (not ready) in `stable` mode.
 */
export function segmentKeyOf(n: KiloNode, granularity: Granularity): string {
  return granularity === 'location' && n.internalIPs.length > 0 ? `location:${n.location}` : `node:${n.name}`;
}

/** The highest slot a segment may take: the last address of the subnet (IPv4's broadcast) is left out, as Kilo leaves it. */
export function maxSlot(subnet: Cidr): number {
  const last = subnet.size() - 2n;
  return last > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(last);
}

/** The slot of an address: its offset from the subnet's network address; null outside the subnet. */
export function slotOf(subnet: Cidr, ip: IP): number | null {
  if (!subnet.contains(ip)) return null;
  if (ip.family === 4) return (ip.v4 >>> 0) - (subnet.network.v4 >>> 0);
  let offset = 0n;
  const a = ip.bytes;
  const b = subnet.network.bytes;
  for (let i = 0; i < a.length; i++) offset = (offset << 8n) + BigInt(a[i]! - b[i]!);
  return offset > BigInt(Number.MAX_SAFE_INTEGER) ? null : Number(offset);
}

/** The slots of the placed segments (see the rules above); Kilo's rule alone when nothing is forced. */
export function allocateSlots(placed: readonly PlacedSegment[], context?: AllocationContext): Allocation {
  const mode = context?.mode ?? 'kilo';
  // The common case costs one pass over the nodes: no claims, Kilo's rule.
  if (!context || (mode === 'kilo' && !context.nodes.some((n) => n.forceWireGuardIP !== null)))
    return { slots: kiloSlots(placed), problems: [] };
  const { claims, problems } = claimsOf(placed, { ...context, graceSeconds: stableGraceSeconds });
  const max = maxSlotOf(context.subnets ?? [context.subnet]);
  const byOwner = new Map<string, Claim>();
  const bySlot = new Map<number, Claim>();
  for (const c of claims.sort(strongestFirst)) {
    const held = byOwner.get(c.owner) ?? bySlot.get(c.slot);
    if (!held) {
      byOwner.set(c.owner, c);
      bySlot.set(c.slot, c);
    } else if (c.forcedBy.length > 0) {
      problems.push(...c.forcedBy.map((name) => lostForce(name, c, held, context.subnet)));
    }
  }
  // A segment gone for good gives its address back first when the subnet runs out: the oldest
  // last-seen first, so the map stays a function of the objects.
  const reserved = [...bySlot.values()]
    .filter((c) => !c.placed)
    .sort((a, b) => a.lastSeen - b.lastSeen || a.slot - b.slot);
  const slots = new Array<number>(placed.length);
  let next = 1;
  for (let i = 0; i < placed.length; i++) {
    const own = byOwner.get(placed[i]!.key);
    if (own) {
      slots[i] = own.slot;
      continue;
    }
    while (next <= max && bySlot.has(next)) next++;
    if (next <= max) {
      slots[i] = next++;
      continue;
    }
    const freed = reserved.shift();
    // topology.ts refuses more segments than the subnet has addresses, so a placed one is never left without.
    if (!freed) throw new RangeError(`no free slot in ${context.subnet.networkText} for ${placed[i]!.key}`);
    slots[i] = freed.slot;
  }
  problems.sort((a, b) => (a.message < b.message ? -1 : a.message > b.message ? 1 : 0));
  return { slots, problems };
}

/**
 * The order claims are granted in: a forced address its segment already holds, then forced, then
 * published; a placed segment before one that is gone; then the lower slot, the claim more nodes
 * make, the first key. A total order on (owner, slot), so the objects' order cannot matter.
 */
function strongestFirst(a: Claim, b: Claim): number {
  return (
    b.strength - a.strength ||
    Number(b.placed) - Number(a.placed) ||
    a.slot - b.slot ||
    b.forcedBy.length + b.publishedBy - (a.forcedBy.length + a.publishedBy) ||
    (a.owner < b.owner ? -1 : a.owner > b.owner ? 1 : 0)
  );
}
