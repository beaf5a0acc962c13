/**
 * The writes and lists of the lab's API server as kube-apiserver answers them: bodies in JSON
 * or YAML (415 otherwise), name and namespace checks (400), optimistic concurrency and
 * preconditions (409), validation (422), patches (apiserver-patch.ts), paging and selectors.
 * Each returns the response body or throws ApiError.
 */
import type { IncomingMessage } from 'node:http';
import { parse as parseYaml } from 'yaml';
import type { KubeObject } from '../../../src/model/parse.js';
import { decodeContinue, encodeContinue, selectorOf } from './apiserver-list.js';
import { applyPatchBody } from './apiserver-patch.js';
import { apiVersionOf, type ResourceType } from './apiserver-resources.js';
import { ApiError, notFound } from './apiserver-status.js';
import { metaOf, type ObjectStore } from './apiserver-store.js';
import { admit } from './apiserver-validate.js';

/** One request on one resource: its type, namespace (namespaced types only), body and query. */
export interface ResourceRequest {
  type: ResourceType;
  namespace: string | undefined;
  req: IncomingMessage;
  body: string;
  query: URLSearchParams;
}

const contentTypeOf = (req: IncomingMessage): string => (req.headers['content-type'] ?? '').split(';')[0]!.trim();

/** The body of a POST or PUT: JSON or YAML, as kube-apiserver takes them (not protobuf). */
function objectBody(r: ResourceRequest): KubeObject {
  const contentType = contentTypeOf(r.req);
  let body: unknown;
  try {
    if (contentType === 'application/json') body = JSON.parse(r.body);
    else if (contentType === 'application/yaml') body = parseYaml(r.body);
    else
      throw new ApiError(
        415,
        'UnsupportedMediaType',
        `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml`,
      );
  } catch (e) {
    if (e instanceof ApiError) throw e;
    throw new ApiError(400, 'BadRequest', `the body is not ${contentType}: ${(e as Error).message.split('\n')[0]!}`);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new ApiError(400, 'BadRequest', 'the body must be an object');
  const obj = body as KubeObject;
  const { type } = r;
  if (
    (obj.kind !== undefined && obj.kind !== type.kind) ||
    (obj.apiVersion !== undefined && obj.apiVersion !== apiVersionOf(type))
  )
    throw new ApiError(
      400,
      'BadRequest',
      `the API version in the data (${obj.apiVersion ?? ''}) or its kind (${obj.kind ?? ''}) does not match the expected ${apiVersionOf(type)} ${type.kind}`,
    );
  return obj;
}

function inNamespace(r: ResourceRequest, obj: KubeObject): KubeObject {
  if (!r.type.namespaced) return obj;
  const given = metaOf(obj).namespace;
  if (given !== undefined && given !== r.namespace)
    throw new ApiError(
      400,
      'BadRequest',
      'the namespace of the provided object does not match the namespace sent on the request',
    );
  return { ...obj, metadata: { ...obj.metadata, namespace: r.namespace } as KubeObject['metadata'] };
}

const storedOf = (store: ObjectStore, type: ResourceType) => (): KubeObject[] => store.sorted(type).map(([, o]) => o);

function existing(store: ObjectStore, r: ResourceRequest, name: string): KubeObject {
  const old = store.peek(r.type, r.namespace, name);
  if (!old) throw notFound(r.type.name, name);
  return old;
}

/** Stores an update after the checks kube-apiserver makes: name, optimistic concurrency, validation. */
function update(store: ObjectStore, r: ResourceRequest, name: string, old: KubeObject, obj: KubeObject): KubeObject {
  const meta = metaOf(obj);
  if (meta.name !== name)
    throw new ApiError(
      400,
      'BadRequest',
      `the name of the object (${String(meta.name).slice(0, 100)}) does not match the name on the URL (${name})`,
    );
  const checked = inNamespace(r, obj);
  const rv = meta.resourceVersion;
  if (rv !== undefined && rv !== '' && rv !== metaOf(old).resourceVersion)
    throw new ApiError(
      409,
      'Conflict',
      `Operation cannot be fulfilled on ${r.type.name} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
    );
  return store.replace(r.type, admit(r.type, checked, old, storedOf(store, r.type)));
}

export function createRequest(store: ObjectStore, r: ResourceRequest): KubeObject {
  if (r.type.namespaced && r.namespace === undefined)
    throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
  const obj = admit(r.type, inNamespace(r, objectBody(r)), undefined, storedOf(store, r.type));
  const { resourceVersion: _rv, uid: _uid, ...meta } = metaOf(obj);
  return store.create(r.type, { ...obj, metadata: meta });
}

export function replaceRequest(store: ObjectStore, r: ResourceRequest, name: string): KubeObject {
  const obj = objectBody(r);
  return update(store, r, name, existing(store, r, name), obj);
}

export function patchRequest(store: ObjectStore, r: ResourceRequest, name: string): KubeObject {
  const old = existing(store, r, name);
  const patched = applyPatchBody(contentTypeOf(r.req), old, r.body, r.type.custom) as KubeObject;
  if (typeof patched !== 'object' || patched === null || Array.isArray(patched))
    throw new ApiError(422, 'Invalid', 'the patched object is not an object');
  if (patched.kind !== old.kind || patched.apiVersion !== old.apiVersion)
    throw new ApiError(400, 'BadRequest', 'a patch may not change kind or apiVersion');
  return update(store, r, name, old, patched);
}

/** DELETE with DeleteOptions' preconditions; custom resources answer the object, built-ins a Status. */
export function deleteRequest(store: ObjectStore, r: ResourceRequest, name: string): unknown {
  const old = existing(store, r, name);
  let options: { preconditions?: { uid?: string; resourceVersion?: string } } = {};
  if (r.body.trim()) {
    try {
      options = JSON.parse(r.body) as typeof options;
    } catch (e) {
      throw new ApiError(400, 'BadRequest', `DeleteOptions are not JSON: ${(e as Error).message}`);
    }
  }
  const pre = options.preconditions ?? {};
  const meta = metaOf(old);
  if ((pre.uid && pre.uid !== meta.uid) || (pre.resourceVersion && pre.resourceVersion !== meta.resourceVersion))
    throw new ApiError(
      409,
      'Conflict',
      `Operation cannot be fulfilled on ${r.type.name} "${name}": Precondition failed: UID in precondition: ${pre.uid ?? ''}, UID in object meta: ${meta.uid ?? ''}`,
    );
  const gone = store.remove(r.type, r.namespace, name);
  if (r.type.custom) return gone;
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Success',
    details: { name, kind: r.type.name, uid: meta.uid },
    code: 200,
  };
}

/**
 * A list: selectors, then `limit`/`continue` pages at the first page's resourceVersion (410
 * once compacted). `resourceVersion=0` is served whole, as the watch cache serves it.
 */
export function listRequest(store: ObjectStore, r: ResourceRequest): unknown {
  const { type, namespace, query: q } = r;
  const matches = selectorOf(q, type);
  const limit = Number(q.get('limit') ?? '0');
  if (!Number.isSafeInteger(limit) || limit < 0)
    throw new ApiError(400, 'BadRequest', `limit ${JSON.stringify(q.get('limit'))} is not a count`);
  const from = q.get('resourceVersion') ?? '';
  const token = q.get('continue');
  if (token && from !== '')
    throw new ApiError(400, 'BadRequest', 'specifying resource version is not allowed when using continue');
  if (from !== '' && from !== '0') {
    const n = Number(from);
    if (!Number.isSafeInteger(n))
      throw new ApiError(400, 'BadRequest', `resourceVersion ${JSON.stringify(from)} is not a number`);
    if (n > store.rv) throw new ApiError(504, 'Timeout', `Too large resource version: ${n}, current: ${store.rv}`);
  }
  let rv = store.rv;
  let start = '';
  if (token) {
    ({ rv, start } = decodeContinue(token));
    if (rv < store.floor)
      throw new ApiError(
        410,
        'Expired',
        'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.',
      );
  }
  let entries = store
    .at(type, rv)
    .filter(([key, o]) => key >= start && (namespace === undefined || metaOf(o).namespace === namespace) && matches(o));
  const metadata: Record<string, unknown> = { resourceVersion: String(rv) };
  if (limit > 0 && from !== '0' && entries.length > limit) {
    metadata.continue = encodeContinue({ rv, start: `${entries[limit - 1]![0]}\u0000` });
    metadata.remainingItemCount = entries.length - limit;
    entries = entries.slice(0, limit);
  }
  const items = entries.map(([, o]) => {
    if (type.custom) return o;
    const { apiVersion: _a, kind: _k, ...rest } = o;
    return rest;
  });
  return { apiVersion: apiVersionOf(type), kind: type.listKind, metadata, items };
}

export function getRequest(store: ObjectStore, r: ResourceRequest, name: string): KubeObject {
  return existing(store, r, name);
}
