/**
 * The resource types the lab's API server serves, and how a request path names one. A new type
 * (Leases, say) is one more `ResourceType` passed in `TestApiServerOptions.resources`: storage,
 * list, watch, get, create, replace, patch, delete and discovery then come with it.
 */
import type { KubeObject } from '../../../src/model/parse.js';

export interface ResourceType {
  /** The plural, as in the path: `nodes`. */
  name: string;
  singular: string;
  /** '' for the core group. */
  group: string;
  version: string;
  kind: string;
  listKind: string;
  namespaced: boolean;
  /**
   * Served from a CustomResourceDefinition: list items keep kind/apiVersion (core lists omit
   * them) and strategic merge patches are refused with 415, as kube-apiserver does.
   */
  custom: boolean;
  shortNames?: string[];
  /** kube-apiserver's validation of the type's own fields (metadata is checked for every type): one message per error. */
  validate?: (obj: KubeObject) => string[];
  /**
   * kube-apiserver's defaulting, allocation and validation of a write, with the object it replaces
   * (none on create) and the type's stored objects (for what is allocated): the object to store and
   * one message per error.
   */
  admit?: (obj: KubeObject, old: KubeObject | undefined, stored: () => readonly KubeObject[]) => Admitted;
}

/** A write as the type's admission leaves it. */
export interface Admitted {
  object: KubeObject;
  errors: string[];
}

export const nodesType: ResourceType = {
  name: 'nodes',
  singular: 'node',
  group: '',
  version: 'v1',
  kind: 'Node',
  listKind: 'NodeList',
  namespaced: false,
  custom: false,
  shortNames: ['no'],
};

export const peersType: ResourceType = {
  name: 'peers',
  singular: 'peer',
  group: 'kilo.squat.ai',
  version: 'v1alpha1',
  kind: 'Peer',
  listKind: 'PeerList',
  namespaced: false,
  custom: true,
};

export const crdsType: ResourceType = {
  name: 'customresourcedefinitions',
  singular: 'customresourcedefinition',
  group: 'apiextensions.k8s.io',
  version: 'v1',
  kind: 'CustomResourceDefinition',
  listKind: 'CustomResourceDefinitionList',
  namespaced: false,
  custom: false,
  shortNames: ['crd', 'crds'],
};

export const namespacesType: ResourceType = {
  name: 'namespaces',
  singular: 'namespace',
  group: '',
  version: 'v1',
  kind: 'Namespace',
  listKind: 'NamespaceList',
  namespaced: false,
  custom: false,
  shortNames: ['ns'],
};

/** Empty in the lab; served because `kubectl describe node` lists a node's pods and events. */
export const podsType: ResourceType = {
  name: 'pods',
  singular: 'pod',
  group: '',
  version: 'v1',
  kind: 'Pod',
  listKind: 'PodList',
  namespaced: true,
  custom: false,
  shortNames: ['po'],
};

export const eventsType: ResourceType = {
  name: 'events',
  singular: 'event',
  group: '',
  version: 'v1',
  kind: 'Event',
  listKind: 'EventList',
  namespaced: true,
  custom: false,
  shortNames: ['ev'],
};

export const builtinResources: readonly ResourceType[] = [
  nodesType,
  peersType,
  crdsType,
  namespacesType,
  podsType,
  eventsType,
];

/** The namespaces every cluster has. */
export const builtinNamespaces = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];

export const apiVersionOf = (t: ResourceType): string => (t.group ? `${t.group}/${t.version}` : t.version);

export const groupVersionPath = (t: ResourceType): string =>
  t.group ? `/apis/${t.group}/${t.version}` : `/api/${t.version}`;

/** What a request path names: a collection (no name) or one object, maybe under a namespace. */
export interface Target {
  type: ResourceType;
  /** Set for namespaced requests; a namespaced collection without it lists every namespace. */
  namespace?: string;
  name?: string;
}

/**
 * Resolves `/api/v1/nodes/a`, `/apis/G/V/namespaces/N/R/x` and the like; undefined for any other
 * path (discovery, subresources, unknown types).
 */
export function parsePath(path: string, types: readonly ResourceType[]): Target | undefined {
  const parts = path.split('/').filter((p) => p !== '');
  let group: string;
  let rest: string[];
  if (parts[0] === 'api' && parts.length >= 3) {
    group = '';
    rest = parts.slice(1);
  } else if (parts[0] === 'apis' && parts.length >= 4) {
    group = parts[1]!;
    rest = parts.slice(2);
  } else return undefined;
  const version = rest[0]!;
  let namespace: string | undefined;
  let tail = rest.slice(1);
  if (tail[0] === 'namespaces' && tail.length >= 3) {
    namespace = decodeURIComponent(tail[1]!);
    tail = tail.slice(2);
  }
  if (tail.length < 1 || tail.length > 2) return undefined;
  const type = types.find((t) => t.group === group && t.version === version && t.name === tail[0]);
  if (!type) return undefined;
  if (namespace !== undefined && !type.namespaced) return undefined;
  const name = tail[1] === undefined ? undefined : decodeURIComponent(tail[1]);
  // A namespaced object is only reachable through its namespace.
  if (type.namespaced && name !== undefined && namespace === undefined) return undefined;
  return { type, ...(namespace !== undefined ? { namespace } : {}), ...(name !== undefined ? { name } : {}) };
}

/** The store key of an object: its name, or namespace/name. */
export const keyOf = (namespace: string | undefined, name: string): string =>
  namespace === undefined ? name : `${namespace}/${name}`;
