/**
 * The shapes of the Kubernetes objects Kilo reads, checked before any value is used: the edge of
 * the model. Snapshot files, the Kubernetes API and the webhook all hand objects to parse.ts, which
 * checks them here first, so nothing below sees a number where a string belongs. Only the types
 * are checked here; the meaning of each value (a CIDR, a key, an endpoint) is parse.ts's.
 */
import * as z from './zod.js';
import { ValidationError } from './errors.js';

const objectNamePattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Kubernetes object names (RFC 1123 subdomains), as the API server enforces them for Nodes and Peers. */
const objectName = z
  .string()
  .check(
    z.minLength(1, 'missing'),
    z.maxLength(253, 'longer than 253 characters'),
    z.regex(objectNamePattern, 'not a Kubernetes object name'),
  );

const stringMap = z.nullish(z.record(z.string(), z.string()));

const metadata = z.looseObject({
  name: objectName,
  annotations: stringMap,
  labels: stringMap,
});

/** What every object of a list must be before its kind can be told. */
export const objectShape = z.looseObject({
  apiVersion: z.optional(z.string()),
  kind: z.optional(z.string()),
});

export const nodeShape = z.looseObject({
  metadata,
  spec: z.nullish(z.looseObject({ podCIDR: z.nullish(z.string()) })),
});
export type NodeObject = z.infer<typeof nodeShape>;

const seconds = z.nullish(z.union([z.number(), z.string()]));

export const peerShape = z.looseObject({
  metadata,
  spec: z.looseObject({
    allowedIPs: z.array(z.string()).check(z.minLength(1, 'a Peer needs at least one allowed IP')),
    publicKey: z.string(),
    endpoint: z.nullish(
      z.looseObject({
        dnsOrIP: z.nullish(z.looseObject({ dns: z.nullish(z.string()), ip: z.nullish(z.string()) })),
        port: z.number(),
      }),
    ),
    persistentKeepalive: seconds,
    presharedKey: z.nullish(z.string()),
  }),
});
export type PeerObject = z.infer<typeof peerShape>;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const optionalString = (v: unknown) => v === undefined || typeof v === 'string';
const nullishString = (v: unknown) => v === undefined || v === null || typeof v === 'string';

function nullishStringMap(v: unknown): boolean {
  if (v === undefined || v === null) return true;
  if (!isObject(v)) return false;
  for (const k in v) if (typeof v[k] !== 'string') return false;
  return true;
}

/*
 * Quick yeses for the shapes every object of a big cluster has: zod copies each object it checks,
 * which was a tenth of `kgctl plan` at 5,000 nodes. Each accepts only what its zod schema accepts
 * (test/model/schema.test.ts checks that on generated objects); whatever it does not accept goes
 * through zod, which decides and names the problem.
 */

/** `objectShape` surely holds. */
export function plainObjectHead(v: unknown): v is z.infer<typeof objectShape> {
  return isObject(v) && optionalString(v['apiVersion']) && optionalString(v['kind']);
}

/** `nodeShape` surely holds. */
export function plainNode(v: unknown): v is NodeObject {
  if (!isObject(v)) return false;
  const metadata = v['metadata'];
  if (!isObject(metadata)) return false;
  const name = metadata['name'];
  if (typeof name !== 'string' || name.length === 0 || name.length > 253 || !objectNamePattern.test(name)) return false;
  if (!nullishStringMap(metadata['annotations']) || !nullishStringMap(metadata['labels'])) return false;
  const spec = v['spec'];
  return spec === undefined || spec === null || (isObject(spec) && nullishString(spec['podCIDR']));
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
  shape: z.ZodMiniType<T>,
  value: unknown,
  object: string,
): { ok: true; value: T } | { ok: false; errors: ValidationError[] } {
  const r = shape.safeParse(value);
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
