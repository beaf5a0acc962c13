import { readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { extname } from 'node:path';
import { oneLine, UsageError } from '../model/errors.js';
import type { KubeObject } from '../model/parse.js';

/**
 * The largest snapshot read: past this a mistake (a log, a disk image) is likelier than a cluster
 * (docs/performance.md#limits).
 */
export const maxSnapshotBytes = 256 * 1024 * 1024;

/** YAML's aliases can make a small file expand exponentially ("billion laughs"). */
const maxYamlAliases = 100;

/**
 * Reads a cluster snapshot: a Kubernetes `List` (JSON or YAML) or multi-document YAML, as
 * `kubectl get nodes,peers.kilo.squat.ai -o yaml` prints it.
 */
export function loadSnapshot(path: string): KubeObject[] {
  let text: string;
  try {
    const size = statSync(path).size;
    if (size > maxSnapshotBytes)
      throw new UsageError(
        `cluster file ${path} is ${mb(size)}, more than the ${mb(maxSnapshotBytes)} a snapshot may be`,
      );
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if (e instanceof UsageError) throw e;
    throw new UsageError(
      `cannot read cluster file ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
    );
  }
  return parseSnapshot(text, path);
}

/**
 * JSON is parsed as JSON: as YAML (its superset) the same text takes ten times the time and
 * memory. A `.json` file, or one whose first character opens an object or array, is JSON.
 */
export function parseSnapshot(text: string, source: string): KubeObject[] {
  const ext = extname(source).toLowerCase();
  const json = ext === '.json' || (ext !== '.yaml' && ext !== '.yml' && /^\s*[[{]/.test(text));
  const objects: KubeObject[] = [];
  if (json) {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (e) {
      const error = new UsageError(`cluster file ${source} is not valid JSON: ${firstLine(e)}`);
      // JSON documents separated by `---` are YAML; a file named .json must be JSON.
      if (ext === '.json') throw error;
      try {
        value = parseYaml(text, source);
      } catch {
        throw error;
      }
      for (const doc of value as unknown[]) collect(doc, objects, source);
      return objects;
    }
    collect(value, objects, source);
    return objects;
  }
  for (const doc of parseYaml(text, source)) collect(doc, objects, source);
  return objects;
}

type YamlModule = typeof import('yaml');
let yaml: YamlModule | undefined;

/** The YAML parser is loaded only for YAML files: JSON-only commands start without it. */
function parseYaml(text: string, source: string): unknown[] {
  yaml ??= createRequire(import.meta.url)('yaml') as YamlModule;
  try {
    return yaml.parseAllDocuments(text).map((doc) => {
      if (doc.errors.length > 0) throw doc.errors[0]!;
      return doc.toJS({ maxAliasCount: maxYamlAliases }) as unknown;
    });
  } catch (e) {
    // A document nested too deeply overflows the parser's stack: a RangeError, one line too.
    const reason = e instanceof RangeError || /call stack/i.test(firstLine(e)) ? 'nested too deeply' : firstLine(e);
    throw new UsageError(`cluster file ${source} is not valid YAML or JSON: ${reason}`);
  }
}

/** Lists inside Lists are unusual; deeper than this, the file is not a snapshot. */
const maxListDepth = 8;

function collect(value: unknown, into: KubeObject[], source: string, depth = 0): void {
  if (value === null || value === undefined) return;
  if (depth > maxListDepth) throw new UsageError(`cluster file ${source} nests Lists more than ${maxListDepth} deep`);
  if (typeof value !== 'object' || Array.isArray(value)) {
    const what = Array.isArray(value) ? 'a bare array' : JSON.stringify(value).slice(0, 40);
    throw new UsageError(`cluster file ${source} holds ${what}, not Kubernetes objects`);
  }
  const obj = value as KubeObject & { items?: unknown };
  if (typeof obj.kind === 'string' && obj.kind.endsWith('List') && Array.isArray(obj.items)) {
    for (const item of obj.items) collect(item, into, source, depth + 1);
    return;
  }
  into.push(obj);
}

/** A parser's first line is the reason; the rest quotes the input back. */
const firstLine = (e: unknown) => oneLine(e, 200, true);

function mb(bytes: number): string {
  return `${Math.round(bytes / (1024 * 1024))} MB`;
}
