import type { Family } from './cidr.js';

/**
 * Values of one kind per address family — a node's pod CIDRs or internal IPs, a segment's
 * WireGuard IPs: at most one per family, IPv4's first. A cluster of one family holds lists of one,
 * so every reader loops over them the same way whether there are one or two families. Nodes
 * without a value share `noValues` (no array each).
 */
export type ByFamily<T> = readonly T[];

export const noValues: ByFamily<never> = Object.freeze([]);

/** The value of `family`, or null. */
export function ofFamily<T extends { readonly family: Family }>(values: ByFamily<T>, family: Family): T | null {
  for (let i = 0; i < values.length; i++) if (values[i]!.family === family) return values[i]!;
  return null;
}

/** One value (or none) as a ByFamily list; none is the shared empty list. */
export function single<T>(value: T | null): ByFamily<T> {
  return value === null ? noValues : [value];
}

/**
 * Two values of different families in ByFamily order (IPv4's first), or null when both are of one
 * family: a node has one pod CIDR per family, as Kubernetes allows.
 */
export function pair<T extends { readonly family: Family }>(a: T, b: T): ByFamily<T> | null {
  if (a.family === b.family) return null;
  return a.family === 4 ? [a, b] : [b, a];
}

/** A value given once or per family (a flag of one or two CIDRs) as a ByFamily list. */
export function listOf<T extends object>(value: T | ByFamily<T>): ByFamily<T> {
  return Array.isArray(value) ? (value as ByFamily<T>) : [value as T];
}
