import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { KubeObject } from '../../../src/model/parse.js';
import type { TestApiServer } from './apiserver.js';

/**
 * The lab API server's etcd: its objects and revision in one file, a Kubernetes List (so it
 * doubles as a `kgctl --cluster` snapshot) whose resourceVersion is the server's revision.
 */
export interface SavedState {
  objects: KubeObject[];
  revision: number;
}

export function loadState(file: string): SavedState | null {
  if (!existsSync(file)) return null;
  const list = JSON.parse(readFileSync(file, 'utf8')) as {
    items?: KubeObject[];
    metadata?: { resourceVersion?: string };
  };
  const revision = Number(list.metadata?.resourceVersion ?? '0');
  if (!Number.isSafeInteger(revision) || revision < 0)
    throw new Error(
      `${file}: metadata.resourceVersion is not a revision: ${JSON.stringify(list.metadata?.resourceVersion).slice(0, 100)}`,
    );
  return { objects: list.items ?? [], revision };
}

/** Written whole and renamed into place: a crash leaves the old state or the new, never half. */
export function saveState(file: string, server: TestApiServer): void {
  const list = {
    apiVersion: 'v1',
    kind: 'List',
    metadata: { resourceVersion: server.resourceVersion },
    items: server.allObjects(),
  };
  writeFileSync(`${file}.tmp`, `${JSON.stringify(list, null, 1)}\n`);
  renameSync(`${file}.tmp`, file);
}
