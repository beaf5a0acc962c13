import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { UsageError } from '../model/errors.js';
import type { KubeObject } from '../model/parse.js';

/**
 * Reads a cluster snapshot: a Kubernetes `List` (JSON or YAML) or multi-document YAML, as
 * `kubectl get nodes,peers.kilo.squat.ai -o yaml` prints it.
 */
export function loadSnapshot(path: string): KubeObject[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new UsageError(
      `cannot read cluster file ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
    );
  }
  return parseSnapshot(text, path);
}

export function parseSnapshot(text: string, source: string): KubeObject[] {
  const docs = parseAllDocuments(text);
  const objects: KubeObject[] = [];
  for (const doc of docs) {
    if (doc.errors.length > 0) {
      throw new UsageError(
        `cluster file ${source} is not valid YAML or JSON: ${doc.errors[0]!.message.split('\n')[0]}`,
      );
    }
    collect(doc.toJS() as unknown, objects, source);
  }
  return objects;
}

function collect(value: unknown, into: KubeObject[], source: string): void {
  if (value === null || value === undefined) return;
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new UsageError(`cluster file ${source} holds ${JSON.stringify(value).slice(0, 40)}, not Kubernetes objects`);
  }
  const obj = value as KubeObject & { items?: unknown };
  // kind is unchecked here (any JSON): the model's schema judges each object, this only finds lists.
  if (typeof obj.kind === 'string' && obj.kind.endsWith('List') && Array.isArray(obj.items)) {
    for (const item of obj.items) collect(item, into, source);
    return;
  }
  into.push(obj);
}
