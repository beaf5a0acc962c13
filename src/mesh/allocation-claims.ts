import type { Cidr, IP } from '../net/cidr.js';
import { ofFamily, type ByFamily } from '../net/family.js';
import { ValidationError } from '../model/errors.js';
import { Annotation } from '../model/annotations.js';
import type { WireGuardIPAllocation } from '../model/mesh-flags.js';
import type { Granularity, KiloNode } from '../model/types.js';
import { maxSlot, segmentKeyOf, slotOf, type PlacedSegment } from './allocation.js';

/**
 * One segment's claim on one slot, gathered from its nodes: forced (kilo.squat.ai/force-wireguard-ip)
 * or published (kilo.squat.ai/wireguard-ip, `stable` mode only).
 */
export interface Claim {
  /** The segment's key. */
  owner: string;
  slot: number;
  /** 3: forced and already published by the segment (it holds it); 2: forced; 1: published. */
  strength: 1 | 2 | 3;
  /** The segment is placed (it has ready nodes); else a segment that is gone holds it for the grace period. */
  placed: boolean;
  /** The nodes forcing this slot, by name. */
  forcedBy: string[];
  /** How many of the segment's nodes publish it. */
  publishedBy: number;
  /** The newest last-seen of the nodes claiming it (unix seconds); a placed segment's is `now`. */
  lastSeen: number;
}

export interface ClaimsInput {
  mode: WireGuardIPAllocation;
  subnet: Cidr;
  /** Dual-stack: every family's subnet, `subnet`'s first; a slot is a slot of each. */
  subnets?: ByFamily<Cidr>;
  granularity: Granularity;
  nodes: readonly KiloNode[];
  now: number;
  graceSeconds: number;
}

const forceField = `metadata.annotations["${Annotation.forceWireGuardIP}"]`;

const nodeLabel = (name: string) => `Node ${JSON.stringify(name)}`;

/** A segment's key as a message names it: `location "eu"` or `node "a"`. */
function segmentLabel(key: string): string {
  const colon = key.indexOf(':');
  return `${key.slice(0, colon)} ${JSON.stringify(key.slice(colon + 1))}`;
}

/**
 * The claims of the placed segments' nodes and, in `stable` mode, of the nodes that are not placed
 * but checked in within the grace period (each for the segment it would be placed in); plus one
 * error per forced address that is no slot of --subnet.
 */
export function claimsOf(
  placed: readonly PlacedSegment[],
  input: ClaimsInput,
): { claims: Claim[]; problems: ValidationError[] } {
  const stable = input.mode === 'stable';
  const subnets = input.subnets ?? [input.subnet];
  const max = maxSlotOf(subnets);
  // An address of either family claims its slot in the subnet of its family: a node whose Kilo
  // annotation still holds the IPv6 address of an IPv6-only mesh keeps it when IPv4 is added,
  // and the IPv6 one stays when IPv4 is taken away (docs/wireguard-ips.md#dual-stack).
  const slotIn = (ip: IP): number | null => {
    const s =
      subnets.length === 1 ? (subnets[0]!.family === ip.family ? subnets[0]! : null) : ofFamily(subnets, ip.family);
    const slot = s && slotOf(s, ip);
    return slot !== null && slot >= 1 && slot <= max ? slot : null;
  };
  const problems: ValidationError[] = [];
  const byKey = new Map<string, Claim>();
  const claim = (owner: string, isPlaced: boolean, slot: number, lastSeen: number): Claim => {
    const k = `${owner}\n${slot}`;
    let c = byKey.get(k);
    if (!c) byKey.set(k, (c = { owner, slot, strength: 1, placed: isPlaced, forcedBy: [], publishedBy: 0, lastSeen }));
    c.lastSeen = Math.max(c.lastSeen, lastSeen);
    return c;
  };
  const visit = (n: KiloNode, owner: string, isPlaced: boolean, lastSeen: number) => {
    if (n.forceWireGuardIP) {
      const slot = slotIn(n.forceWireGuardIP);
      if (slot === null) {
        problems.push(
          new ValidationError(
            nodeLabel(n.name),
            forceField,
            n.forceWireGuardIP.text,
            `not a host address of the WireGuard subnet ${subnets.map((c) => c.networkText).join(' or ')} (ignored: its ${segmentLabel(owner)} takes an allocated address)`,
          ),
        );
      } else claim(owner, isPlaced, slot, lastSeen).forcedBy.push(n.name);
    }
    if (!stable) return;
    // Kilo's annotation first, the one Kilo's agents read too; the IPv6 one counts when Kilo's
    // gives no slot (a dual-stack mesh turned IPv6-only), never as a second claim that could take
    // another segment's slot.
    const slot =
      (n.wireGuardIP ? slotIn(n.wireGuardIP.ip) : null) ?? (n.wireGuardIPv6 ? slotIn(n.wireGuardIPv6.ip) : null);
    if (slot !== null) claim(owner, isPlaced, slot, lastSeen).publishedBy++;
  };
  const members = new Set<string>();
  for (const s of placed) {
    for (const n of s.members) {
      members.add(n.name);
      visit(n, s.key, true, input.now);
    }
  }
  // Kilo's rule knows nothing of nodes that are not ready; only `stable` holds their addresses.
  if (stable) {
    for (const n of input.nodes) {
      if (members.has(n.name) || n.lastSeen === null || n.lastSeen + input.graceSeconds < input.now) continue;
      visit(n, segmentKeyOf(n, input.granularity), false, n.lastSeen);
    }
  }
  const claims = [...byKey.values()];
  for (const c of claims) {
    c.forcedBy.sort();
    if (c.forcedBy.length > 0) c.strength = c.publishedBy > 0 ? 3 : 2;
  }
  return { claims, problems };
}

/** The highest slot every family's subnet has. */
export function maxSlotOf(subnets: ByFamily<Cidr>): number {
  let max = maxSlot(subnets[0]!);
  for (let i = 1; i < subnets.length; i++) max = Math.min(max, maxSlot(subnets[i]!));
  return max;
}

/** The error for a node whose forced address lost to `held`: its segment holds another, or another segment holds this one. */
export function lostForce(name: string, lost: Claim, held: Claim, subnet: Cidr): ValidationError {
  const address = subnet.nth(lost.slot)!.text;
  const holder = held.forcedBy.length > 0 ? `forced by ${held.forcedBy.map(nodeLabel).join(', ')}` : 'published';
  const reason =
    held.owner === lost.owner
      ? `its ${segmentLabel(lost.owner)} takes ${subnet.nth(held.slot)!.text} (${holder}); this address is ignored`
      : `already held by ${segmentLabel(held.owner)} (${holder}), which keeps it; ignored: ${segmentLabel(lost.owner)} takes another address`;
  return new ValidationError(nodeLabel(name), forceField, address, reason);
}
