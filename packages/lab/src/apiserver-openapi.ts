/**
 * OpenAPI documents for kubectl. kubectl reads them to decide how to validate (`--validate`,
 * server-side when the PATCH operations take `fieldValidation`) and which patch to send. The
 * schemas here are open objects tagged with their group-version-kind: the lab does not hold
 * Kubernetes' full schemas, and an open schema makes no field unknown.
 */
import { groupVersionPath, type ResourceType } from './apiserver-resources.js';

const definitionName = (t: ResourceType): string =>
  `${t.group ? t.group.split('.').reverse().join('.') : 'io.k8s.api.core'}.${t.version}.${t.kind}`;

const gvk = (t: ResourceType) => [{ group: t.group, version: t.version, kind: t.kind }];

const queryParameters = [
  { name: 'fieldValidation', in: 'query', schema: { type: 'string' }, uniqueItems: true },
  { name: 'fieldManager', in: 'query', schema: { type: 'string' }, uniqueItems: true },
  { name: 'dryRun', in: 'query', schema: { type: 'string' }, uniqueItems: true },
];

function schema(t: ResourceType): Record<string, unknown> {
  return {
    type: 'object',
    'x-kubernetes-group-version-kind': gvk(t),
    'x-kubernetes-preserve-unknown-fields': true,
    additionalProperties: true,
  };
}

function itemPath(t: ResourceType): string {
  const base = groupVersionPath(t);
  return t.namespaced ? `${base}/namespaces/{namespace}/${t.name}/{name}` : `${base}/${t.name}/{name}`;
}

function collectionPath(t: ResourceType): string {
  const base = groupVersionPath(t);
  return t.namespaced ? `${base}/namespaces/{namespace}/${t.name}` : `${base}/${t.name}`;
}

function operations(t: ResourceType, v2: boolean): Record<string, unknown> {
  const ref = v2 ? `#/definitions/${definitionName(t)}` : `#/components/schemas/${definitionName(t)}`;
  const params = v2 ? queryParameters.map(({ schema: s, ...p }) => ({ ...p, type: s.type })) : queryParameters;
  const op = (action: string) => ({
    operationId: `${action}${t.kind}`,
    'x-kubernetes-action': action,
    'x-kubernetes-group-version-kind': gvk(t)[0],
    parameters: params,
    responses: {
      '200': v2 ? { schema: { $ref: ref } } : { content: { 'application/json': { schema: { $ref: ref } } } },
    },
  });
  return {
    [collectionPath(t)]: { get: op('list'), post: op('post') },
    [itemPath(t)]: { get: op('get'), put: op('put'), patch: op('patch'), delete: op('delete') },
  };
}

export function openApiV2(types: readonly ResourceType[]): unknown {
  return {
    swagger: '2.0',
    info: { title: 'Kubernetes (kilo-ts lab)', version: 'v1.30.0' },
    paths: Object.assign({}, ...types.map((t) => operations(t, true))) as Record<string, unknown>,
    definitions: Object.fromEntries(types.map((t) => [definitionName(t), schema(t)])),
  };
}

const v3Key = (t: ResourceType): string => groupVersionPath(t).slice(1);

export function openApiV3Root(types: readonly ResourceType[]): unknown {
  const keys = [...new Set(types.map(v3Key))];
  return { paths: Object.fromEntries(keys.map((k) => [k, { serverRelativeURL: `/openapi/v3/${k}?hash=lab` }])) };
}

/** The OpenAPI v3 document of one group version (`api/v1`, `apis/G/V`), or undefined. */
export function openApiV3(key: string, types: readonly ResourceType[]): unknown {
  const served = types.filter((t) => v3Key(t) === key);
  if (served.length === 0) return undefined;
  return {
    openapi: '3.0.0',
    info: { title: 'Kubernetes (kilo-ts lab)', version: 'v1.30.0' },
    paths: Object.assign({}, ...served.map((t) => operations(t, false))) as Record<string, unknown>,
    components: { schemas: Object.fromEntries(served.map((t) => [definitionName(t), schema(t)])) },
  };
}
