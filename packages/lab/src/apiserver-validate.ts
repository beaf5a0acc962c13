/**
 * What kube-apiserver validates on every write of the served types and answers with 422 Invalid:
 * names, label and annotation syntax, immutable fields. Errors list each field as the real server
 * does (`metadata.labels: Invalid value: "x": ...`), values cut to 100 characters.
 */
import type { KubeObject } from '../../../src/model/parse.js';
import { ApiError } from './apiserver-status.js';
import type { ResourceType } from './apiserver-resources.js';

const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const qualifiedName = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const labelValue = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

const cut = (v: unknown): string => JSON.stringify(v)?.slice(0, 100) ?? String(v);

function keyErrors(field: string, key: string): string[] {
  const slash = key.lastIndexOf('/');
  const prefix = slash < 0 ? undefined : key.slice(0, slash);
  const name = slash < 0 ? key : key.slice(slash + 1);
  const out: string[] = [];
  if (prefix !== undefined && (prefix.length > 253 || !dnsSubdomain.test(prefix)))
    out.push(`${field}: Invalid value: ${cut(key)}: prefix part must be a lowercase RFC 1123 subdomain`);
  if (name.length > 63 || !qualifiedName.test(name))
    out.push(
      `${field}: Invalid value: ${cut(key)}: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (at most 63 characters)`,
    );
  return out;
}

function metadataErrors(type: ResourceType, obj: KubeObject): string[] {
  const out: string[] = [];
  const meta = (obj.metadata ?? {}) as {
    name?: unknown;
    labels?: unknown;
    annotations?: unknown;
  };
  const name = meta.name;
  const namePattern = type.kind === 'Namespace' ? dnsLabel : dnsSubdomain;
  if (typeof name !== 'string' || name === '')
    out.push('metadata.name: Required value: name or generateName is required');
  else if (name.length > 253 || !namePattern.test(name))
    out.push(
      `metadata.name: Invalid value: ${cut(name)}: a lowercase RFC 1123 ${type.kind === 'Namespace' ? 'label' : 'subdomain'} must consist of lower case alphanumeric characters, '-' or '.'`,
    );
  for (const [field, map] of [
    ['metadata.labels', meta.labels],
    ['metadata.annotations', meta.annotations],
  ] as const) {
    if (map === undefined || map === null) continue;
    if (typeof map !== 'object' || Array.isArray(map)) {
      out.push(`${field}: Invalid value: ${cut(map)}: must be a map of strings`);
      continue;
    }
    for (const [k, v] of Object.entries(map as Record<string, unknown>)) {
      out.push(...keyErrors(field, k));
      if (typeof v !== 'string') out.push(`${field}[${k}]: Invalid value: ${cut(v)}: must be a string`);
      else if (field === 'metadata.labels' && (v.length > 63 || !labelValue.test(v)))
        out.push(
          `${field}: Invalid value: ${cut(v)}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (at most 63 characters)`,
        );
    }
    if (field === 'metadata.annotations' && JSON.stringify(map).length > 256 * 1024)
      out.push(`${field}: Too long: must have at most 262144 bytes`);
  }
  return out;
}

/** Fields a Node may not change once set (kube-apiserver's node strategy). */
function nodeUpdateErrors(old: KubeObject, obj: KubeObject): string[] {
  const before = (old.spec as { podCIDR?: string; podCIDRs?: string[] } | undefined) ?? {};
  const after = (obj.spec as { podCIDR?: string; podCIDRs?: string[] } | undefined) ?? {};
  const out: string[] = [];
  if (before.podCIDR && before.podCIDR !== after.podCIDR)
    out.push('spec.podCIDR: Forbidden: node updates may not change podCIDR except from "" to valid');
  if (before.podCIDRs?.length && JSON.stringify(before.podCIDRs) !== JSON.stringify(after.podCIDRs))
    out.push('spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid');
  return out;
}

/**
 * The object kube-apiserver stores for a write (the type's defaults and allocations applied);
 * throws 422 Invalid, as kube-apiserver does, for one it would not store.
 */
export function admit(
  type: ResourceType,
  given: KubeObject,
  old: KubeObject | undefined,
  stored: () => readonly KubeObject[],
): KubeObject {
  const admitted = type.admit?.(given, old, stored) ?? { object: given, errors: [] };
  validate(type, admitted.object, old, admitted.errors);
  return admitted.object;
}

/** Throws 422 Invalid, as kube-apiserver does, for an object it would not store. */
export function validate(type: ResourceType, obj: KubeObject, old?: KubeObject, more: readonly string[] = []): void {
  const errors = [...metadataErrors(type, obj), ...(type.validate?.(obj) ?? []), ...more];
  if (old) {
    const uid = (o: KubeObject) => (o.metadata as { uid?: string } | undefined)?.uid;
    if (uid(obj) !== undefined && uid(obj) !== uid(old))
      errors.push(`metadata.uid: Invalid value: ${cut(uid(obj))}: field is immutable`);
    if (type.kind === 'Node') errors.push(...nodeUpdateErrors(old, obj));
  }
  if (errors.length === 0) return;
  const name = obj.metadata?.name ?? '';
  throw new ApiError(
    422,
    'Invalid',
    `${type.kind} ${JSON.stringify(String(name).slice(0, 100))} is invalid: ${errors.length > 1 ? `[${errors.join(', ')}]` : errors[0]}`,
  );
}
