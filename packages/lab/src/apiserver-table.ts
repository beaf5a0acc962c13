/**
 * Server-side printing, as kube-apiserver does it for `kubectl get`: a GET whose Accept header asks
 * for `application/json;as=Table;g=meta.k8s.io;v=v1` (or v1beta1) is answered with a
 * meta.k8s.io Table instead of the object or list. The columns are kube-apiserver's:
 * - Nodes: its node printer (pkg/printers/internalversion): Name, Status (Ready/NotReady/Unknown
 *   from the Ready condition, plus SchedulingDisabled), Roles (node-role.kubernetes.io/<role>
 *   labels and kubernetes.io/role, sorted, or <none>), Age, Version (the kubelet's), and the
 *   priority-1 columns `-o wide` shows: Internal-IP, External-IP, OS-Image, Kernel-Version,
 *   Container-Runtime;
 * - Namespaces (Name, Status, Age) and Leases (Name, Holder, Age): their printers;
 * - custom resources: the CRD's additionalPrinterColumns for the served version (a JSONPath
 *   subset: `.a.b`, `[N]`, `['key']`), or Age alone when it has none — Age is not added to
 *   columns the CRD gives, as apiextensions-apiserver's table convertor does not add it;
 * - every other type (CustomResourceDefinitions among them): the generic convertor's Name and
 *   Created At.
 * Each row carries the object as `includeObject` asks: Metadata (default, a PartialObjectMetadata),
 * Object (the whole object), None. The Accept header is negotiated as kube-apiserver does: the
 * first clause it can serve wins, a Table clause of another version is skipped, plain JSON (or
 * no Accept) is the object itself; only Table clauses it cannot serve is 406.
 */
import type { KubeObject } from '../../../src/model/parse.js';
import { apiVersionOf, crdsType, type ResourceType } from './apiserver-resources.js';
import { ApiError } from './apiserver-status.js';
import { metaOf, type ObjectStore } from './apiserver-store.js';

export interface TableColumn {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}

type Cell = string | number | boolean | null;

/** What a request's Accept header asks for: the object (JSON), or a Table of this meta.k8s.io version. */
export type Rendering = { as: 'object' } | { as: 'table'; version: 'v1' | 'v1beta1' };

/** Negotiates the Accept header of a GET (list or get). Throws 406 when only unservable Tables are asked for. */
export function renderingOf(accept: string | undefined): Rendering {
  if (accept === undefined || accept.trim() === '') return { as: 'object' };
  const clauses = accept.split(',').map((clause) => {
    const [mediaType = '', ...params] = clause.split(';').map((p) => p.trim());
    const p = new Map(
      params.map((kv) => {
        const i = kv.indexOf('=');
        return [kv.slice(0, i).trim().toLowerCase(), kv.slice(i + 1).trim()] as const;
      }),
    );
    return { mediaType: mediaType.toLowerCase(), p, q: p.has('q') ? Number(p.get('q')) : 1 };
  });
  const ordered = clauses.filter((c) => !(c.q <= 0)).sort((a, b) => b.q - a.q);
  for (const c of ordered) {
    const json = c.mediaType === 'application/json' || c.mediaType === 'application/*' || c.mediaType === '*/*';
    const as = c.p.get('as');
    if (as === undefined) {
      // application/yaml and protobuf are answered as JSON too, as this server always did.
      return { as: 'object' };
    }
    const v = c.p.get('v');
    if (json && as === 'Table' && c.p.get('g') === 'meta.k8s.io' && (v === 'v1' || v === 'v1beta1'))
      return { as: 'table', version: v };
  }
  if (ordered.some((c) => c.p.get('as') === 'Table'))
    throw new ApiError(
      406,
      'NotAcceptable',
      `only the following media types are accepted: application/json, application/json;as=Table;g=meta.k8s.io;v=v1, application/json;as=Table;g=meta.k8s.io;v=v1beta1`,
    );
  return { as: 'object' };
}

const column = (name: string, type: string, description: string, priority = 0, format = ''): TableColumn => ({
  name,
  type,
  format,
  description,
  priority,
});
const nameColumn = column('Name', 'string', 'Name must be unique within a namespace.', 0, 'name');
const ageColumn = column(
  'Age',
  'string',
  'CreationTimestamp is a timestamp representing the server time when this object was created.',
);

/** Go's duration.HumanDuration: ~2-3 significant figures, as kubectl's AGE shows. */
export function humanDuration(ms: number): string {
  const seconds = Math.trunc(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.trunc(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.trunc(minutes / 60);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) return hours % 24 === 0 ? `${hours / 24}d` : `${Math.trunc(hours / 24)}d${hours % 24}h`;
  const days = Math.trunc(hours / 24);
  if (hours < 24 * 365 * 2) return `${days}d`;
  if (hours < 24 * 365 * 8) return days % 365 === 0 ? `${days / 365}y` : `${Math.trunc(days / 365)}y${days % 365}d`;
  return `${Math.trunc(days / 365)}y`;
}

/** A timestamp's age as kube-apiserver prints it; `<unknown>` without one. */
function age(timestamp: unknown, now: number): string {
  const t = typeof timestamp === 'string' ? Date.parse(timestamp) : NaN;
  return Number.isNaN(t) ? '<unknown>' : humanDuration(now - t);
}

const str = (v: unknown, otherwise = ''): string => (typeof v === 'string' ? v : otherwise);

const record = (v: unknown): Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

interface Printer {
  columns: TableColumn[];
  cells: (obj: KubeObject, now: number) => Cell[];
}

function nodeCells(obj: KubeObject, now: number): Cell[] {
  const meta = metaOf(obj);
  const spec = record((obj as { spec?: unknown }).spec);
  const st = record((obj as { status?: unknown }).status);
  const conditions = Array.isArray(st['conditions']) ? st['conditions'].map(record) : [];
  const ready = conditions.filter((c) => c['type'] === 'Ready').pop();
  const status = [ready === undefined ? 'Unknown' : ready['status'] === 'True' ? 'Ready' : 'NotReady'];
  if (spec['unschedulable'] === true) status.push('SchedulingDisabled');
  const roles = new Set<string>();
  for (const [k, v] of Object.entries(record(meta.labels))) {
    if (k.startsWith('node-role.kubernetes.io/') && k.length > 'node-role.kubernetes.io/'.length)
      roles.add(k.slice('node-role.kubernetes.io/'.length));
    else if (k === 'kubernetes.io/role' && typeof v === 'string' && v !== '') roles.add(v);
  }
  const info = record(st['nodeInfo']);
  const addresses = Array.isArray(st['addresses']) ? st['addresses'].map(record) : [];
  const address = (type: string) => {
    const a = addresses.find((x) => x['type'] === type)?.['address'];
    return typeof a === 'string' ? a : '<none>';
  };
  const text = (v: unknown, otherwise: string) => (typeof v === 'string' && v !== '' ? v : otherwise);
  return [
    String(meta.name ?? ''),
    status.join(','),
    [...roles].sort().join(',') || '<none>',
    age(meta.creationTimestamp, now),
    text(info['kubeletVersion'], ''),
    address('InternalIP'),
    address('ExternalIP'),
    text(info['osImage'], '<unknown>'),
    text(info['kernelVersion'], '<unknown>'),
    text(info['containerRuntimeVersion'], '<unknown>'),
  ];
}

const nodePrinter: Printer = {
  columns: [
    nameColumn,
    column('Status', 'string', 'The status of the node'),
    column('Roles', 'string', 'The roles of the node'),
    ageColumn,
    column('Version', 'string', 'Kubelet Version reported by the node.'),
    column(
      'Internal-IP',
      'string',
      'List of addresses reachable to the node. Queried from cloud provider, if available.',
      1,
    ),
    column(
      'External-IP',
      'string',
      'List of addresses reachable to the node. Queried from cloud provider, if available.',
      1,
    ),
    column(
      'OS-Image',
      'string',
      'OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).',
      1,
    ),
    column(
      'Kernel-Version',
      'string',
      "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
      1,
    ),
    column(
      'Container-Runtime',
      'string',
      'ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).',
      1,
    ),
  ],
  cells: nodeCells,
};

/** NAME, one string field's column, AGE: the printers of Namespaces and Leases. */
function oneFieldPrinter(name: string, description: string, field: (obj: unknown) => unknown): Printer {
  return {
    columns: [nameColumn, column(name, 'string', description), ageColumn],
    cells: (obj, now) => {
      const value = field(obj);
      return [
        String(metaOf(obj).name ?? ''),
        typeof value === 'string' ? value : '',
        age(metaOf(obj).creationTimestamp, now),
      ];
    },
  };
}

const namespacePrinter = oneFieldPrinter(
  'Status',
  'The status of the namespace',
  (obj) => record((obj as { status?: unknown }).status)['phase'],
);

const leasePrinter = oneFieldPrinter(
  'Holder',
  'The holder of the lease',
  (obj) => record((obj as { spec?: unknown }).spec)['holderIdentity'],
);

/** The generic convertor of types without a printer (CustomResourceDefinitions, for one). */
const defaultPrinter: Printer = {
  columns: [nameColumn, column('Created At', 'date', ageColumn.description)],
  cells: (obj) => {
    const t = Date.parse(str(metaOf(obj).creationTimestamp));
    return [String(metaOf(obj).name ?? ''), new Date(Number.isNaN(t) ? 0 : t).toISOString().replace(/\.\d+Z$/, 'Z')];
  },
};

const printers: Record<string, Printer> = { Node: nodePrinter, Namespace: namespacePrinter, Lease: leasePrinter };

/**
 * A JSONPath of a printer column, in the subset CRDs use: `.a.b`, `.a[0]`, `.a['b.c']`. Returns
 * the steps, or undefined for a path outside the subset (its cells are then empty).
 */
function jsonPathSteps(path: string): (string | number)[] | undefined {
  const steps: (string | number)[] = [];
  const re = /\.([A-Za-z0-9_-]+)|\[(\d+)\]|\['([^']*)'\]|\["([^"]*)"\]/y;
  let at = 0;
  while (at < path.length) {
    re.lastIndex = at;
    const m = re.exec(path);
    if (!m) return undefined;
    steps.push(m[1] ?? (m[2] !== undefined ? Number(m[2]) : (m[3] ?? m[4]!)));
    at = re.lastIndex;
  }
  return steps;
}

/** A printer column's cell as apiextensions-apiserver computes it from the value found. */
function customCell(type: string, value: unknown): Cell {
  if (value === undefined || value === null) return null;
  switch (type) {
    case 'string':
      // JSONPath prints maps and lists as JSON, scalars as text.
      return typeof value === 'string' ? value : JSON.stringify(value);
    case 'integer':
      return typeof value === 'number' ? Math.trunc(value) : null;
    case 'number':
      return typeof value === 'number' ? value : null;
    case 'boolean':
      return typeof value === 'boolean' ? value : null;
    case 'date':
      return typeof value === 'string'
        ? Number.isNaN(Date.parse(value))
          ? '<invalid>'
          : age(value, Date.now())
        : null;
    default:
      return null;
  }
}

interface CrdColumn {
  name?: unknown;
  type?: unknown;
  format?: unknown;
  description?: unknown;
  priority?: unknown;
  jsonPath?: unknown;
}

/** The printer of a custom resource, from its CRD's additionalPrinterColumns (Age alone without them). */
function customPrinter(store: ObjectStore, type: ResourceType): Printer {
  const crd = store.peek(crdsType, undefined, `${type.name}.${type.group}`);
  const versions = record((crd as { spec?: unknown } | undefined)?.spec)['versions'];
  const version = Array.isArray(versions) ? versions.map(record).find((v) => v['name'] === type.version) : undefined;
  const given = Array.isArray(version?.['additionalPrinterColumns'])
    ? (version['additionalPrinterColumns'] as CrdColumn[])
    : [];
  const defs: CrdColumn[] = given.length
    ? given
    : [{ name: 'Age', type: 'date', description: ageColumn.description, jsonPath: '.metadata.creationTimestamp' }];
  const paths = defs.map((d) => jsonPathSteps(str(d.jsonPath)));
  return {
    columns: [
      nameColumn,
      ...defs.map((d) =>
        column(
          str(d.name),
          str(d.type, 'string'),
          typeof d.description === 'string' && d.description
            ? d.description
            : `Custom resource definition column (in JSONPath format): ${str(d.jsonPath)}`,
          typeof d.priority === 'number' ? d.priority : 0,
          typeof d.format === 'string' ? d.format : '',
        ),
      ),
    ],
    cells: (obj) => [
      String(metaOf(obj).name ?? ''),
      ...paths.map((steps, i) => {
        let v: unknown = obj;
        for (const s of steps ?? [])
          v = typeof v === 'object' && v !== null ? (v as Record<string, unknown>)[s] : undefined;
        return steps ? customCell(str(defs[i]!.type, 'string'), v) : null;
      }),
    ],
  };
}

/** What each row carries of its object, per meta.k8s.io TableOptions' includeObject. */
function rowObject(obj: KubeObject, type: ResourceType, include: string, tableVersion: string): unknown {
  if (include === 'None') return null;
  if (include === 'Object') return { ...obj, apiVersion: apiVersionOf(type), kind: type.kind };
  return { kind: 'PartialObjectMetadata', apiVersion: `meta.k8s.io/${tableVersion}`, metadata: obj.metadata ?? {} };
}

/**
 * The Table of a list or get answer (`answer` is what the JSON request would have returned):
 * one row per item (or the object), the list's resourceVersion, continue and remainingItemCount.
 */
export function toTable(
  store: ObjectStore,
  type: ResourceType,
  answer: unknown,
  rendering: { version: string },
  query: URLSearchParams,
): unknown {
  const include = query.get('includeObject') ?? 'Metadata';
  if (!['Object', 'Metadata', 'None', ''].includes(include))
    throw new ApiError(400, 'BadRequest', `unrecognized includeObject value: ${JSON.stringify(include.slice(0, 100))}`);
  const printer = type.custom ? customPrinter(store, type) : (printers[type.kind] ?? defaultPrinter);
  const body = record(answer);
  const isList = Array.isArray(body['items']);
  const objects = (isList ? body['items'] : [answer]) as KubeObject[];
  const listMeta = record(body['metadata']);
  const metadata: Record<string, unknown> = {
    resourceVersion: isList ? listMeta['resourceVersion'] : metaOf(answer as KubeObject).resourceVersion,
  };
  if (isList && listMeta['continue'] !== undefined) metadata['continue'] = listMeta['continue'];
  if (isList && listMeta['remainingItemCount'] !== undefined)
    metadata['remainingItemCount'] = listMeta['remainingItemCount'];
  const now = Date.now();
  return {
    kind: 'Table',
    apiVersion: `meta.k8s.io/${rendering.version}`,
    metadata,
    columnDefinitions: printer.columns,
    rows: objects.map((o) => ({
      cells: printer.cells(o, now),
      object: rowObject(o, type, include || 'Metadata', rendering.version),
    })),
  };
}
