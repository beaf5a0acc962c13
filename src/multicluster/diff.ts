/**
 * What to write so a cluster holds what is mirrored into it: the objects wanted against those it
 * has of one kind. Only objects carrying the owner label with the source's name are the
 * controller's: one of the same name without it is someone else's, left alone and reported. An
 * object is rewritten only when something the controller sets differs (what the API server adds,
 * defaults and a Service's clusterIP, is no difference). Pure.
 */
import type { KubeObject } from '../model/parse.js';
import { sourceLabel } from './view.js';

export type Change =
  { op: 'create'; object: KubeObject } | { op: 'replace'; object: KubeObject } | { op: 'delete'; object: KubeObject };

export interface Plan {
  changes: Change[];
  /** One per wanted object whose name is taken by an object the controller does not own. */
  conflicts: string[];
}

export const namespaceOf = (o: KubeObject): string =>
  (o.metadata as { namespace?: string } | undefined)?.namespace ?? '';

/** `namespace/name`, `/name` for a cluster-scoped object. */
export const keyOf = (o: KubeObject): string => `${namespaceOf(o)}/${o.metadata?.name ?? ''}`;

export const ownedBy = (o: KubeObject, source: string): boolean => o.metadata?.labels?.[sourceLabel] === source;

/** True when every field `want` sets is set the same in `have` (lists: same length, item by item). */
export function holds(have: unknown, want: unknown): boolean {
  if (Array.isArray(want))
    return Array.isArray(have) && have.length === want.length && want.every((w, i) => holds(have[i], w));
  if (typeof want === 'object' && want !== null) {
    if (typeof have !== 'object' || have === null || Array.isArray(have)) return false;
    return Object.entries(want).every(([k, w]) => holds((have as Record<string, unknown>)[k], w));
  }
  return have === want;
}

const described = (o: KubeObject): string => `${o.kind ?? 'object'} ${keyOf(o).replace(/^\//, '')}`;

export function planChanges(wanted: readonly KubeObject[], existing: readonly KubeObject[], source: string): Plan {
  const have = new Map(existing.map((o) => [keyOf(o), o]));
  const changes: Change[] = [];
  const conflicts: string[] = [];
  const keep = new Set<string>();
  for (const w of wanted) {
    const key = keyOf(w);
    keep.add(key);
    const h = have.get(key);
    if (!h) changes.push({ op: 'create', object: w });
    else if (!ownedBy(h, source))
      conflicts.push(
        `${described(w)} exists and is not mirrored from cluster "${source}" (no label ${sourceLabel}=${source}): left alone`,
      );
    else if (!holds(h, { metadata: { labels: w.metadata?.labels ?? {} }, ...withoutMeta(w) })) {
      const metadata = { ...w.metadata, resourceVersion: h.metadata?.resourceVersion };
      changes.push({ op: 'replace', object: { ...w, metadata } });
    }
  }
  for (const h of existing) if (ownedBy(h, source) && !keep.has(keyOf(h))) changes.push({ op: 'delete', object: h });
  return { changes, conflicts };
}

function withoutMeta(o: KubeObject): Record<string, unknown> {
  const { metadata: _m, apiVersion: _a, kind: _k, ...rest } = o as Record<string, unknown>;
  return rest;
}
