/**
 * The lab API server's objects and their history, as etcd and the watch cache hold them: one
 * resourceVersion counter for every object, each change a history entry (with the object before
 * it, so a list can be read as it was at an older version), a floor below which history is gone.
 */
import { randomUUID } from 'node:crypto';
import type { KubeObject } from '../../../src/model/parse.js';
import { applyMergePatch } from './apiserver-patch.js';
import { apiVersionOf, keyOf, type ResourceType } from './apiserver-resources.js';
import { ApiError, notFound } from './apiserver-status.js';

export interface HistoryEntry {
  rv: number;
  resource: string;
  key: string;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: KubeObject;
  /** The object before the change (MODIFIED, DELETED). */
  previous?: KubeObject;
}

export type Meta = Record<string, unknown> & {
  name?: string;
  namespace?: string;
  resourceVersion?: string;
  uid?: string;
};

export const metaOf = (o: KubeObject): Meta => o.metadata ?? {};

const byKey = ([a]: [string, KubeObject], [b]: [string, KubeObject]): number => (a < b ? -1 : a > b ? 1 : 0);

export class ObjectStore {
  private readonly objects = new Map<string, Map<string, KubeObject>>();
  private history: HistoryEntry[] = [];
  private listeners: ((e: HistoryEntry) => void)[] = [];
  /** History starts after this resourceVersion: older ones are compacted away. */
  floor = 0;
  rv = 1;

  constructor(
    readonly types: readonly ResourceType[],
    private readonly historyLimit: number,
  ) {
    for (const t of types) this.objects.set(t.name, new Map());
  }

  /** Called with every change, after it is stored. */
  onRecord(listener: (e: HistoryEntry) => void): void {
    this.listeners.push(listener);
  }

  typeOfKind(o: KubeObject): ResourceType {
    const t = this.types.find((x) => x.kind === o.kind && (!o.apiVersion || apiVersionOf(x) === o.apiVersion));
    if (!t) throw new Error(`test apiserver: no served type for ${o.apiVersion ?? '?'} ${o.kind ?? '?'}`);
    return t;
  }

  /** The stored object (not a copy: callers must not change it). */
  peek(type: ResourceType, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.objects.get(type.name)!.get(keyOf(type.namespaced ? namespace : undefined, name));
  }

  has(type: ResourceType, key: string): boolean {
    return this.objects.get(type.name)!.has(key);
  }

  /** [key, object] of a type (optionally one namespace's) in key order; objects not copied. */
  sorted(type: ResourceType, namespace?: string): [string, KubeObject][] {
    const all = [...this.objects.get(type.name)!];
    const mine = namespace === undefined ? all : all.filter(([, o]) => metaOf(o).namespace === namespace);
    return mine.sort(byKey);
  }

  /** [key, object] of a type as they were at resourceVersion `rv`, rolled back through history. */
  at(type: ResourceType, rv: number): [string, KubeObject][] {
    if (rv >= this.rv) return this.sorted(type);
    const state = new Map(this.objects.get(type.name));
    for (let i = this.history.length - 1; i >= 0 && this.history[i]!.rv > rv; i--) {
      const e = this.history[i]!;
      if (e.resource !== type.name) continue;
      if (e.type === 'ADDED') state.delete(e.key);
      else state.set(e.key, e.previous!);
    }
    return [...state].sort(byKey);
  }

  /** The changes to a type after resourceVersion `rv`, oldest first. */
  since(type: ResourceType, rv: number): HistoryEntry[] {
    return this.history.filter((e) => e.resource === type.name && e.rv > rv);
  }

  /**
   * As etcd keeps a restarted kube-apiserver's objects and revision: each object keeps its
   * resourceVersion and uid, and the history starts empty at the revision, so a watch resumed
   * from before the restart gets 410 and the client re-lists.
   */
  restore(objects: readonly KubeObject[], revision: number): void {
    for (const o of objects) {
      const type = this.typeOfKind(o);
      const rv = Number(metaOf(o).resourceVersion);
      const stored = this.stored(type, o, Number.isSafeInteger(rv) ? rv : revision, o);
      this.objects.get(type.name)!.set(this.keyIn(type, stored), stored);
      revision = Math.max(revision, Number(metaOf(stored).resourceVersion));
    }
    this.rv = this.floor = revision;
  }

  /** Forgets the history: every resourceVersion before now is gone. */
  compact(): void {
    this.floor = this.rv;
    this.history = [];
  }

  private stored(type: ResourceType, obj: KubeObject, rv: number, old?: KubeObject): KubeObject {
    const meta = metaOf(obj);
    const name = meta.name;
    if (!name) throw new ApiError(422, 'Invalid', `${type.kind}: metadata.name: Required value`);
    const out = structuredClone(obj) as KubeObject & { metadata: Meta };
    out.apiVersion = apiVersionOf(type);
    out.kind = type.kind;
    const before = old ? metaOf(old) : undefined;
    out.metadata = {
      ...meta,
      name,
      resourceVersion: String(rv),
      uid: before?.uid ?? meta.uid ?? randomUUID(),
      creationTimestamp:
        before?.creationTimestamp ?? meta.creationTimestamp ?? new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    };
    if (type.namespaced) out.metadata.namespace = meta.namespace ?? 'default';
    else delete out.metadata.namespace;
    return out;
  }

  private keyIn(type: ResourceType, obj: KubeObject): string {
    const meta = metaOf(obj);
    return keyOf(type.namespaced ? (meta.namespace ?? 'default') : undefined, meta.name ?? '');
  }

  create(type: ResourceType, obj: KubeObject): KubeObject {
    const key = this.keyIn(type, obj);
    if (this.has(type, key))
      throw new ApiError(409, 'AlreadyExists', `${type.name} "${metaOf(obj).name ?? ''}" already exists`);
    const stored = this.stored(type, obj, this.rv + 1);
    this.rv++;
    this.objects.get(type.name)!.set(key, stored);
    this.record(type, key, 'ADDED', stored);
    return structuredClone(stored);
  }

  replace(type: ResourceType, obj: KubeObject): KubeObject {
    const key = this.keyIn(type, obj);
    const old = this.objects.get(type.name)!.get(key);
    if (!old) throw notFound(type.name, metaOf(obj).name ?? '');
    const stored = this.stored(type, obj, this.rv + 1, old);
    this.rv++;
    this.objects.get(type.name)!.set(key, stored);
    this.record(type, key, 'MODIFIED', stored, old);
    return structuredClone(stored);
  }

  /** A JSON merge patch of a cluster-scoped object (the tests' hand). */
  mergePatch(type: ResourceType, name: string, patch: unknown): KubeObject {
    const old = this.peek(type, undefined, name);
    if (!old) throw notFound(type.name, name);
    const merged = applyMergePatch(old, patch) as KubeObject;
    merged.metadata = { ...merged.metadata, name };
    return this.replace(type, merged);
  }

  remove(type: ResourceType, namespace: string | undefined, name: string): KubeObject {
    const key = keyOf(type.namespaced ? namespace : undefined, name);
    const old = this.objects.get(type.name)!.get(key);
    if (!old) throw notFound(type.name, name);
    this.objects.get(type.name)!.delete(key);
    // The deleted object carries the deletion's resourceVersion, as kube-apiserver's does.
    const gone = this.stored(type, old, ++this.rv, old);
    this.record(type, key, 'DELETED', gone, old);
    return structuredClone(gone);
  }

  private record(
    type: ResourceType,
    key: string,
    kind: HistoryEntry['type'],
    object: KubeObject,
    previous?: KubeObject,
  ): void {
    const entry: HistoryEntry = { rv: this.rv, resource: type.name, key, type: kind, object: structuredClone(object) };
    if (previous) entry.previous = previous;
    this.history.push(entry);
    while (this.history.length > this.historyLimit) this.floor = this.history.shift()!.rv;
    for (const l of this.listeners) l(entry);
  }
}
