/**
 * Where each segment's WireGuard IPs sit in --subnet: a slot, the offset of the address from the
 * subnet's network address (1 is the first host). One slot per segment serves every family: the
 * segment's address in each family's subnet is that family's address at the same slot, so the
 * two correspond.
 */
export interface PlacedSegment {
  /** `location:<name>` or `node:<name>`, in key order. */
  key: string;
}

/** Kilo's rule (pkg/mesh/topology.go): the n-th segment in key order takes slot n (from 1). */
export function kiloSlots(placed: readonly PlacedSegment[]): number[] {
  const slots = new Array<number>(placed.length);
  for (let i = 0; i < placed.length; i++) slots[i] = i + 1;
  return slots;
}
