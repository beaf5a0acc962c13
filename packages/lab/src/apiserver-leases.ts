/**
 * Leases (coordination.k8s.io/v1) in the lab's API server, as kube-apiserver serves them to a
 * leader election: a namespaced type of the generic store (create 409 AlreadyExists, get, list,
 * watch, replace with optimistic concurrency — a stale metadata.resourceVersion is 409, none is an
 * unconditional update, which Leases allow — patch, delete), plus kube-apiserver's validation of
 * the spec: MicroTime with exactly six fractional digits, positive leaseDurationSeconds,
 * non-negative leaseTransitions, a string holderIdentity.
 */
import type { KubeObject } from '../../../src/model/parse.js';
import type { ResourceType } from './apiserver-resources.js';

/** metav1.MicroTime as Go's RFC3339Micro parses it: six fractional digits, no fewer. */
const microTime = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|[+-]\d{2}:\d{2})$/;

function leaseErrors(obj: KubeObject): string[] {
  const spec: unknown = (obj as { spec?: unknown }).spec;
  if (spec === undefined) return [];
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec))
    return ['spec: Invalid value: must be an object'];
  const s = spec as Record<string, unknown>;
  const out: string[] = [];
  for (const f of ['renewTime', 'acquireTime'] as const) {
    const v = s[f];
    if (v !== undefined && v !== null && (typeof v !== 'string' || !microTime.test(v)))
      out.push(
        `spec.${f}: Invalid value: ${JSON.stringify(JSON.stringify(v).slice(0, 100))}: not a MicroTime (RFC 3339 with microseconds)`,
      );
  }
  const d = s['leaseDurationSeconds'];
  if (d !== undefined && d !== null && (!Number.isInteger(d) || (d as number) <= 0))
    out.push(`spec.leaseDurationSeconds: Invalid value: ${JSON.stringify(d)}: must be greater than 0`);
  const t = s['leaseTransitions'];
  if (t !== undefined && t !== null && (!Number.isInteger(t) || (t as number) < 0))
    out.push(`spec.leaseTransitions: Invalid value: ${JSON.stringify(t)}: must be greater than or equal to 0`);
  const h = s['holderIdentity'];
  if (h !== undefined && h !== null && typeof h !== 'string')
    out.push(`spec.holderIdentity: Invalid value: ${JSON.stringify(h)}: must be a string`);
  return out;
}

export const leasesType: ResourceType = {
  name: 'leases',
  singular: 'lease',
  group: 'coordination.k8s.io',
  version: 'v1',
  kind: 'Lease',
  listKind: 'LeaseList',
  namespaced: true,
  custom: false,
  validate: leaseErrors,
};
