/**
 * What narrows a list or a watch as kube-apiserver does it: label and field selectors (the
 * equality- and set-based forms), and `limit`/`continue` paging with tokens that carry the
 * resourceVersion of the first page.
 */
import type { KubeObject } from '../../../src/model/parse.js';
import { ApiError } from './apiserver-status.js';
import type { ResourceType } from './apiserver-resources.js';

type Predicate = (obj: KubeObject) => boolean;

const labelsOf = (obj: KubeObject): Record<string, string> =>
  (obj.metadata as { labels?: Record<string, string> } | undefined)?.labels ?? {};

/** Splits at commas outside parentheses (`a in (x,y),b`). */
function requirements(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of text) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      out.push(cur.trim());
      cur = '';
    } else cur += ch;
  }
  if (cur.trim()) out.push(cur.trim());
  return out;
}

export function labelSelector(text: string): Predicate {
  const tests: Predicate[] = requirements(text).map((r) => {
    let m = /^([^\s!=(),]+)\s*(==|=|!=)\s*([^\s!=(),]*)$/.exec(r);
    if (m) {
      const [, key, op, value] = m as unknown as [string, string, string, string];
      return op === '!=' ? (o) => labelsOf(o)[key] !== value : (o) => labelsOf(o)[key] === value;
    }
    m = /^([^\s!=(),]+)\s+(in|notin)\s+\(([^()]*)\)$/.exec(r);
    if (m) {
      const [, key, op, list] = m as unknown as [string, string, string, string];
      const values = new Set(list.split(',').map((v) => v.trim()));
      return op === 'in' ? (o) => values.has(labelsOf(o)[key] ?? '\0') : (o) => !values.has(labelsOf(o)[key] ?? '\0');
    }
    m = /^(!?)([^\s!=(),]+)$/.exec(r);
    if (m) {
      const [, not, key] = m as unknown as [string, string, string];
      return not ? (o) => !(key in labelsOf(o)) : (o) => key in labelsOf(o);
    }
    throw new ApiError(400, 'BadRequest', `unable to parse requirement: ${JSON.stringify(r.slice(0, 100))}`);
  });
  return (o) => tests.every((t) => t(o));
}

/** Field labels each type supports beside metadata.name and metadata.namespace. */
const fieldLabels: Record<string, readonly string[]> = {
  Node: ['spec.unschedulable'],
  Pod: ['spec.nodeName', 'spec.restartPolicy', 'spec.schedulerName', 'status.phase', 'status.podIP'],
  Event: [
    'involvedObject.kind',
    'involvedObject.namespace',
    'involvedObject.name',
    'involvedObject.uid',
    'involvedObject.apiVersion',
    'involvedObject.resourceVersion',
    'involvedObject.fieldPath',
    'reason',
    'reportingComponent',
    'source',
    'type',
  ],
};

function field(obj: KubeObject, path: string): string {
  let v: unknown = obj;
  for (const p of path.split('.'))
    v = typeof v === 'object' && v !== null ? (v as Record<string, unknown>)[p] : undefined;
  if (v === undefined || v === null) return path === 'spec.unschedulable' ? 'false' : '';
  return typeof v === 'string' ? v : JSON.stringify(v);
}

export function fieldSelector(text: string, type: ResourceType): Predicate {
  const allowed = ['metadata.name', 'metadata.namespace', ...(fieldLabels[type.kind] ?? [])];
  const tests: Predicate[] = requirements(text).map((r) => {
    const m = /^([^\s!=]+)\s*(==|=|!=)\s*(.*)$/.exec(r);
    if (!m) throw new ApiError(400, 'BadRequest', `invalid field selector: ${JSON.stringify(r.slice(0, 100))}`);
    const [, path, op, value] = m as unknown as [string, string, string, string];
    if (!allowed.includes(path))
      throw new ApiError(400, 'BadRequest', `field label not supported: ${path.slice(0, 100)}`);
    return op === '!=' ? (o) => field(o, path) !== value : (o) => field(o, path) === value;
  });
  return (o) => tests.every((t) => t(o));
}

/** The selectors of a request as one predicate (everything passes without them). */
export function selectorOf(query: URLSearchParams, type: ResourceType): Predicate {
  const label = query.get('labelSelector');
  const fields = query.get('fieldSelector');
  const a = label ? labelSelector(label) : () => true;
  const b = fields ? fieldSelector(fields, type) : () => true;
  return (o) => a(o) && b(o);
}

export interface ContinueToken {
  rv: number;
  /** The first key of the next page. */
  start: string;
}

/** kube-apiserver's token shape: base64 of {"v":"meta.k8s.io/v1","rv":N,"start":"KEY\u0000"}. */
export function encodeContinue(t: ContinueToken): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv: t.rv, start: t.start })).toString('base64');
}

export function decodeContinue(text: string): ContinueToken {
  try {
    const t = JSON.parse(Buffer.from(text, 'base64').toString('utf8')) as {
      v?: unknown;
      rv?: unknown;
      start?: unknown;
    };
    if (t.v === 'meta.k8s.io/v1' && Number.isSafeInteger(t.rv) && typeof t.start === 'string')
      return { rv: t.rv as number, start: t.start };
  } catch {
    // answered below
  }
  throw new ApiError(400, 'BadRequest', `continue key is not valid: ${JSON.stringify(text.slice(0, 100))}`);
}
