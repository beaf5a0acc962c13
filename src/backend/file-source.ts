import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import type { KubeObject } from '../model/parse.js';
import { loadSnapshot } from './snapshot.js';
import { mergeAnnotations, silentLogger, type ChangeListener, type ClusterSource, type Logger } from './source.js';

export interface FileSourceOptions {
  /** Re-read the file when it changes. */
  watch?: boolean;
  /** Quiet time after the last file event before re-reading: editors write in several steps. */
  debounceMs?: number;
  logger?: Logger;
  now?: () => number;
}

/**
 * A cluster snapshot file as a ClusterSource (`kg apply`). Patches live in memory only and are
 * laid over every re-read of the file, so the agent's own annotations survive an edit of it.
 */
export class FileSource implements ClusterSource {
  private readonly path: string;
  private readonly options: Required<Omit<FileSourceOptions, 'watch'>> & { watch: boolean };
  private fileObjects: KubeObject[] = [];
  private merged: KubeObject[] = [];
  /** Node name → the annotations patched so far, null meaning deleted. */
  private readonly patches = new Map<string, Record<string, string | null>>();
  private readonly listeners: ChangeListener[] = [];
  private watcher: FSWatcher | undefined;
  private debounce: NodeJS.Timeout | undefined;
  private loaded = false;
  private last = 0;

  constructor(path: string, options: FileSourceOptions = {}) {
    this.path = resolve(path);
    this.options = {
      watch: options.watch ?? false,
      debounceMs: options.debounceMs ?? 100,
      logger: options.logger ?? silentLogger,
      now: options.now ?? Date.now,
    };
  }

  start(): Promise<void> {
    // The first read must succeed: a missing or broken file at startup is the user's mistake.
    try {
      this.fileObjects = loadSnapshot(this.path);
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
    this.loaded = true;
    this.rebuild();
    if (this.options.watch) this.watchFile();
    return Promise.resolve();
  }

  stop(): Promise<void> {
    clearTimeout(this.debounce);
    this.debounce = undefined;
    this.watcher?.close();
    this.watcher = undefined;
    return Promise.resolve();
  }

  objects(): KubeObject[] {
    return [...this.merged];
  }

  onChange(listener: ChangeListener): void {
    this.listeners.push(listener);
  }

  synced(): boolean {
    return this.loaded;
  }

  lastSync(): number {
    return this.last;
  }

  patchNodeAnnotations(name: string, annotations: Record<string, string | null>): Promise<void> {
    if (!this.fileObjects.some((o) => o.kind === 'Node' && o.metadata?.name === name)) {
      return Promise.reject(
        new Error(`cannot patch annotations of Node ${JSON.stringify(name)}: not in cluster file ${this.path}`),
      );
    }
    this.patches.set(name, { ...this.patches.get(name), ...annotations });
    this.rebuild();
    this.emit();
    return Promise.resolve();
  }

  /**
   * Watches the directory, not the file: editors and `kubectl … > file` replace the file, and a
   * watch on the old inode would go quiet.
   */
  private watchFile(): void {
    const file = basename(this.path);
    this.watcher = watch(dirname(this.path), (_event, name) => {
      if (name !== null && name !== file) return;
      clearTimeout(this.debounce);
      this.debounce = setTimeout(() => this.reload(), this.options.debounceMs);
    });
    this.watcher.on('error', (err) => {
      this.options.logger.warn(
        { file: this.path, err: err.message },
        'watching the cluster file failed; changes to it are no longer read',
      );
    });
  }

  private reload(): void {
    this.debounce = undefined;
    let objects: KubeObject[];
    try {
      objects = loadSnapshot(this.path);
    } catch (e) {
      // Half-written or deleted for a moment: keep what was read last, the next write retries.
      this.options.logger.warn(
        { file: this.path, err: (e as Error).message },
        'cannot re-read the cluster file; keeping the objects read before',
      );
      return;
    }
    if (objects.length === 0 && this.fileObjects.length > 0) {
      // Truncated and not yet rewritten, most likely; an empty cluster would drop every peer.
      this.options.logger.warn({ file: this.path }, 'the cluster file is empty; keeping the objects read before');
      return;
    }
    this.fileObjects = objects;
    this.rebuild();
    this.emit();
  }

  private rebuild(): void {
    this.merged = this.fileObjects.map((o) => {
      const name = o.metadata?.name;
      const patch = o.kind === 'Node' && name !== undefined ? this.patches.get(name) : undefined;
      if (!patch) return o;
      return { ...o, metadata: { ...o.metadata, annotations: mergeAnnotations(o.metadata?.annotations, patch) } };
    });
    this.last = this.options.now();
  }

  private emit(): void {
    for (const listener of this.listeners) listener();
  }
}
