/**
 * The shapes of the Kubernetes objects Kilo reads, checked before any value is used: the edge of
 * the model. Snapshot files, the Kubernetes API and the webhook all hand objects to parse.ts, which
 * checks them here first, so nothing below sees a number where a string belongs. Only the types
 * are checked here; the meaning of each value (a CIDR, a key, an endpoint) is parse.ts's.
 */
import * as z from './zod.js';
import { ValidationError } from './errors.js';

const objectNamePattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * A schema built when first asked for: the quick yeses below take every object of a healthy
 * cluster, and building zod's schemas was several milliseconds of every `kg apply` and `kgctl` start.
 */
export function lazy<T>(build: () => T): () => T {
  let schema: T | undefined;
  return () => (schema ??= build());
}

const metadata = () =>
  z.looseObject({
    // Kubernetes object names (RFC 1123 subdomains), as the API server enforces them for Nodes and Peers.
    name: z
      .string()
      .check(
        z.minLength(1, 'missing'),
        z.maxLength(253, 'longer than 253 characters'),
        z.regex(objectNamePattern, 'not a Kubernetes object name'),
      ),
    annotations: z.nullish(z.record(z.string(), z.string())),
    labels: z.nullish(z.record(z.string(), z.string())),
  });

/** What every object of a list must be before its kind can be told. */
export const objectShape = lazy(() =>
  z.looseObject({
    apiVersion: z.optional(z.string()),
    kind: z.optional(z.string()),
  }),
);

export type ObjectHead = z.infer<ReturnType<typeof objectShape>>;

export const nodeShape = lazy(() =>
  z.looseObject({
    metadata: metadata(),
    spec: z.nullish(z.looseObject({ podCIDR: z.nullish(z.string()), podCIDRs: z.nullish(z.array(z.string())) })),
  }),
);
export type NodeObject = z.infer<ReturnType<typeof nodeShape>>;

export const peerShape = lazy(() =>
  z.looseObject({
    metadata: metadata(),
    spec: z.looseObject({
      allowedIPs: z.array(z.string()).check(z.minLength(1, 'a Peer needs at least one allowed IP')),
      publicKey: z.string(),
      endpoint: z.nullish(
        z.looseObject({
          dnsOrIP: z.nullish(z.looseObject({ dns: z.nullish(z.string()), ip: z.nullish(z.string()) })),
          port: z.number(),
        }),
      ),
      persistentKeepalive: z.nullish(z.union([z.number(), z.string()])),
      presharedKey: z.nullish(z.string()),
    }),
  }),
);
export type PeerObject = z.infer<ReturnType<typeof peerShape>>;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const optionalString = (v: unknown) => v === undefined || typeof v === 'string';
const nullishString = (v: unknown) => v === undefined || v === null || typeof v === 'string';
const isString = (v: unknown) => typeof v === 'string';

function nullishStringMap(v: unknown): boolean {
  if (v === undefined || v === null) return true;
  if (!isObject(v)) return false;
  for (const k in v) if (typeof v[k] !== 'string') return false;
  return true;
}

/*
 * Quick yeses for the shapes every object of a big cluster has, before zod copies it
 * (docs/performance.md#parsing). Each accepts only what its zod schema accepts
 * (test/model/schema.test.ts checks that on generated objects); whatever it does not accept goes
 * through zod, which decides and names the problem.
 */

/** `objectShape` surely holds. */
export function plainObjectHead(v: unknown): v is ObjectHead {
  return isObject(v) && optionalString(v['apiVersion']) && optionalString(v['kind']);
}

/** `metadata` surely holds. */
function plainMetadata(metadata: unknown): boolean {
  if (!isObject(metadata)) return false;
  const name = metadata['name'];
  if (typeof name !== 'string' || name.length === 0 || name.length > 253 || !objectNamePattern.test(name)) return false;
  return nullishStringMap(metadata['annotations']) && nullishStringMap(metadata['labels']);
}

/** `nodeShape` surely holds. */
export function plainNode(v: unknown): v is NodeObject {
  if (!isObject(v) || !plainMetadata(v['metadata'])) return false;
  const spec = v['spec'];
  if (spec === undefined || spec === null) return true;
  if (!isObject(spec) || !nullishString(spec['podCIDR'])) return false;
  const podCIDRs = spec['podCIDRs'];
  return podCIDRs === undefined || podCIDRs === null || (Array.isArray(podCIDRs) && podCIDRs.every(isString));
}

/** `peerShape` surely holds. */
export function plainPeer(v: unknown): v is PeerObject {
  if (!isObject(v) || !plainMetadata(v['metadata'])) return false;
  const spec = v['spec'];
  if (!isObject(spec) || typeof spec['publicKey'] !== 'string') return false;
  const allowedIPs = spec['allowedIPs'];
  if (!Array.isArray(allowedIPs) || allowedIPs.length === 0) return false;
  for (let i = 0; i < allowedIPs.length; i++) if (typeof allowedIPs[i] !== 'string') return false;
  const keepalive = spec['persistentKeepalive'];
  if (!(nullishString(keepalive) || Number.isFinite(keepalive)) || !nullishString(spec['presharedKey'])) return false;
  const endpoint = spec['endpoint'];
  if (endpoint === undefined || endpoint === null) return true;
  if (!isObject(endpoint) || !Number.isFinite(endpoint['port'])) return false;
  const dnsOrIP = endpoint['dnsOrIP'];
  if (dnsOrIP === undefined || dnsOrIP === null) return true;
  return isObject(dnsOrIP) && nullishString(dnsOrIP['dns']) && nullishString(dnsOrIP['ip']);
}

/** `a.b["kilo.squat.ai/key"][3]`: the path of an issue as the operator reads it in the object. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const [i, p] of path.entries()) {
    if (typeof p === 'number') out += `[${p}]`;
    else if (typeof p === 'string' && /^[A-Za-z_][A-Za-z0-9_]*$/.test(p)) out += i === 0 ? p : `.${p}`;
    else out += `[${JSON.stringify(String(p))}]`;
  }
  return out || '(object)';
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let v = root;
  for (const p of path) {
    if (typeof v !== 'object' || v === null) return undefined;
    v = (v as Record<PropertyKey, unknown>)[p];
  }
  return v;
}

/** Checks `value` against `shape`; every issue becomes a ValidationError naming object, field and value. */
export function checkShape<T>(
  shape: () => z.ZodMiniType<T>,
  value: unknown,
  object: string,
): { ok: true; value: T } | { ok: false; errors: ValidationError[] } {
  const r = shape().safeParse(value);
  if (r.success) return { ok: true, value: r.data };
  // One line per object is enough to find it; a map of 10,000 wrong values needs no 10,000 lines.
  const errors = r.error.issues
    .slice(0, 5)
    .map((i) => new ValidationError(object, fieldPath(i.path), valueAt(value, i.path), reasonOf(i)));
  return { ok: false, errors };
}

function reasonOf(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_type') return `want ${issue.expected}`;
  return issue.message;
}

/** The name an error gives an object whose own name may be missing or of the wrong type. */
export function objectLabel(kind: string, value: unknown): string {
  const name = (value as { metadata?: { name?: unknown } } | null)?.metadata?.name;
  return `${kind} ${typeof name === 'string' ? JSON.stringify(name.length > 100 ? `${name.slice(0, 100)}…` : name) : '(unnamed)'}`;
}
