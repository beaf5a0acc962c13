/**
 * The three patch formats kube-apiserver takes (apply-patch+yaml, server-side apply, aside), with
 * its status codes: a body that is not the format's JSON is 400, a JSON patch that cannot apply
 * (a failed `test`, a missing path) 422, a strategic merge patch of a custom resource 415.
 */
import jsonpatch from 'fast-json-patch';
import { ApiError } from './apiserver-status.js';

export const mergePatchType = 'application/merge-patch+json';
export const strategicMergePatchType = 'application/strategic-merge-patch+json';
export const jsonPatchType = 'application/json-patch+json';

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** RFC 7386 JSON merge patch: objects merge recursively, null deletes, anything else replaces. */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return structuredClone(patch);
  const out: Json = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = applyMergePatch(out[key], value);
  }
  return out;
}

/**
 * Lists that a strategic merge patch merges instead of replacing, by path: the merge key, or
 * null for a list of primitives merged as a set. Every other list of the served types is atomic
 * (replaced whole), as in their Go definitions (`patchStrategy` absent).
 */
const mergeLists: Record<string, string | null> = {
  'metadata.finalizers': null,
  'metadata.ownerReferences': 'uid',
  'status.addresses': 'type',
  'status.conditions': 'type',
  // A Service's (patchMergeKey port); an EndpointSlice's `ports` and an Endpoints' `subsets` are atomic.
  'spec.ports': 'port',
};

const setElementOrder = '$setElementOrder/';

/** The path of the list a `$setElementOrder/<list>` key orders, under `path`. */
const orderedList = (path: string, key: string): string => {
  const list = key.slice(setElementOrder.length);
  return path ? `${path}.${list}` : list;
};

/**
 * Strategic merge patch for the built-in types (Nodes, Services): maps merge as in a merge patch,
 * the lists above merge by key, other lists are replaced. Of the directives, those `kubectl apply`
 * sends for a keyed list are followed: `$setElementOrder/<list>` (the order of the merged list)
 * and `{"$patch": "delete", <key>: …}` in it (that item removed); `$patch` elsewhere, `$retainKeys`
 * and `$deleteFromPrimitiveList` are refused rather than guessed.
 */
export function applyStrategicMergePatch(target: unknown, patch: unknown, path = ''): unknown {
  if (!isObject(patch)) return structuredClone(patch);
  const out: Json = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    const at = path ? `${path}.${key}` : key;
    if (key.startsWith(setElementOrder) && orderedList(path, key) in mergeLists) continue;
    if (key.startsWith('$'))
      throw new ApiError(400, 'BadRequest', `strategic merge patch: the directive ${key} (at ${at}) is not supported`);
    if (value === null) delete out[key];
    else if (Array.isArray(value) && at in mergeLists) out[key] = mergeList(out[key], value, mergeLists[at]!, at);
    else out[key] = applyStrategicMergePatch(out[key], value, at);
  }
  for (const [key, order] of Object.entries(patch)) {
    if (!key.startsWith(setElementOrder) || !Array.isArray(order)) continue;
    const list = key.slice(setElementOrder.length);
    const mergeKey = mergeLists[orderedList(path, key)];
    if (mergeKey && Array.isArray(out[list])) out[list] = ordered(out[list] as unknown[], order as unknown[], mergeKey);
  }
  return out;
}

/** The items in the order given by their merge keys; items not named keep their place after them. */
function ordered(items: unknown[], order: unknown[], mergeKey: string): unknown[] {
  const keyOf = (x: unknown) => (isObject(x) ? x[mergeKey] : undefined);
  const rank = new Map(order.map((o, i) => [keyOf(o), i]));
  const at = (x: unknown) => rank.get(keyOf(x)) ?? order.length;
  return items
    .map((x, i) => ({ x, i }))
    .sort((a, b) => at(a.x) - at(b.x) || a.i - b.i)
    .map(({ x }) => x);
}

function mergeList(target: unknown, patch: unknown[], mergeKey: string | null, at: string): unknown[] {
  const out = Array.isArray(target) ? [...(target as unknown[])] : [];
  for (const item of patch) {
    if (mergeKey === null) {
      if (typeof item === 'object' && item !== null)
        throw new ApiError(
          400,
          'BadRequest',
          `strategic merge patch: ${at} holds primitives, not ${JSON.stringify(item)}`,
        );
      if (!out.includes(item)) out.push(item);
      continue;
    }
    if (!isObject(item) || item[mergeKey] === undefined)
      throw new ApiError(
        400,
        'BadRequest',
        `strategic merge patch: every item of ${at} needs its merge key ${mergeKey}`,
      );
    const i = out.findIndex((x) => isObject(x) && x[mergeKey] === item[mergeKey]);
    if (item['$patch'] === 'delete') {
      if (i >= 0) out.splice(i, 1);
      continue;
    }
    if (i < 0) out.push(applyStrategicMergePatch({}, item, at));
    else out[i] = applyStrategicMergePatch(out[i], item, at);
  }
  return out;
}

/** RFC 6902 JSON patch (a maintained library), `test` included; the target is not modified. */
export function applyJsonPatch(target: unknown, patch: unknown): unknown {
  if (!Array.isArray(patch)) throw new ApiError(400, 'BadRequest', 'a JSON patch must be a JSON array of operations');
  try {
    return jsonpatch.applyPatch(structuredClone(target), patch as jsonpatch.Operation[], true, true).newDocument;
  } catch (e) {
    // kube-apiserver answers a patch that decodes but does not apply with 422.
    const message = ((e as Error).message ?? String(e)).split('\n')[0]!;
    throw new ApiError(422, 'Invalid', `the JSON patch does not apply: ${message}`);
  }
}

/**
 * Applies a PATCH body of the given media type (`custom`: the object is a custom resource).
 * Throws ApiError with kube-apiserver's code: 415 for a type it does not take, 400 for a body
 * that does not parse.
 */
export function applyPatchBody(contentType: string, target: unknown, body: string, custom: boolean): unknown {
  const accepted = custom ? [jsonPatchType, mergePatchType] : [jsonPatchType, mergePatchType, strategicMergePatchType];
  if (!accepted.includes(contentType))
    throw new ApiError(
      415,
      'UnsupportedMediaType',
      `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`,
    );
  let patch: unknown;
  try {
    patch = JSON.parse(body);
  } catch (e) {
    throw new ApiError(400, 'BadRequest', `the patch is not JSON: ${(e as Error).message}`);
  }
  if (contentType === jsonPatchType) return applyJsonPatch(target, patch);
  if (!isObject(patch)) throw new ApiError(400, 'BadRequest', 'a merge patch must be a JSON object');
  return contentType === mergePatchType ? applyMergePatch(target, patch) : applyStrategicMergePatch(target, patch);
}
