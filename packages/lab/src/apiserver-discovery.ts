/**
 * Discovery, as kubectl needs it before anything else: /version, /api, /apis, each group
 * version's resource list, and OpenAPI documents (`kubectl apply` validates against them).
 */
import { apiVersionOf, type ResourceType } from './apiserver-resources.js';
import { openApiV2, openApiV3, openApiV3Root } from './apiserver-openapi.js';

export const serverVersion = {
  major: '1',
  minor: '30',
  gitVersion: 'v1.30.0-kilo-ts-lab',
  gitCommit: '0000000000000000000000000000000000000000',
  gitTreeState: 'clean',
  buildDate: '2024-01-01T00:00:00Z',
  goVersion: 'go1.22.0',
  compiler: 'gc',
  platform: 'linux/amd64',
};

const verbs = ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'];

function resourceList(groupVersion: string, types: readonly ResourceType[]): unknown {
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion,
    resources: types.map((t) => ({
      name: t.name,
      singularName: t.singular,
      namespaced: t.namespaced,
      kind: t.kind,
      verbs,
      ...(t.shortNames ? { shortNames: t.shortNames } : {}),
    })),
  };
}

/** Groups in the order first served, each with its versions (the first preferred). */
function groups(types: readonly ResourceType[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const t of types) {
    if (!t.group) continue;
    const versions = out.get(t.group) ?? [];
    if (!versions.includes(t.version)) versions.push(t.version);
    out.set(t.group, versions);
  }
  return out;
}

/** The discovery document at `path`, or undefined when the path is not one. */
export function discovery(path: string, types: readonly ResourceType[], serverAddress: string): unknown {
  if (path === '/version') return serverVersion;
  if (path === '/api')
    return {
      kind: 'APIVersions',
      versions: ['v1'],
      serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
    };
  if (path === '/apis')
    return {
      kind: 'APIGroupList',
      apiVersion: 'v1',
      groups: [...groups(types)].map(([name, versions]) => ({
        name,
        versions: versions.map((version) => ({ groupVersion: `${name}/${version}`, version })),
        preferredVersion: { groupVersion: `${name}/${versions[0]!}`, version: versions[0]! },
      })),
    };
  if (path === '/api/v1')
    return resourceList(
      'v1',
      types.filter((t) => !t.group),
    );
  const m = /^\/apis\/([^/]+)(?:\/([^/]+))?$/.exec(path);
  if (m) {
    const [, group, version] = m as unknown as [string, string, string | undefined];
    const versions = groups(types).get(group);
    if (!versions) return undefined;
    if (version === undefined)
      return {
        kind: 'APIGroup',
        apiVersion: 'v1',
        name: group,
        versions: versions.map((v) => ({ groupVersion: `${group}/${v}`, version: v })),
        preferredVersion: { groupVersion: `${group}/${versions[0]!}`, version: versions[0]! },
      };
    if (!versions.includes(version)) return undefined;
    return resourceList(
      `${group}/${version}`,
      types.filter((t) => apiVersionOf(t) === `${group}/${version}`),
    );
  }
  if (path === '/openapi/v2') return openApiV2(types);
  if (path === '/openapi/v3') return openApiV3Root(types);
  const v3 = /^\/openapi\/v3\/(apis?\/.+)$/.exec(path);
  if (v3) return openApiV3(v3[1]!, types);
  return undefined;
}
