import type { KubeObject } from '../model/parse.js';

/** One object replaced by a newer version of itself, as a watch event reports it. */
export interface ObjectUpdate {
  readonly previous: KubeObject;
  readonly current: KubeObject;
}

/**
 * Called after every change applied to a source's objects. Cheap: the agent coalesces bursts.
 * `update` is given when the change is exactly one object modified (a watch event), so a
 * listener can tell a heartbeat from a change; a relist, an add or a delete comes without it.
 */
export type ChangeListener = (update?: ObjectUpdate) => void;

/**
 * Where the agent's Nodes and Peers come from: the Kubernetes API (reflectors over list+watch)
 * or a snapshot file. The agent reads `objects()` whenever a listener fires and writes back only
 * annotations of its own node.
 */
export interface ClusterSource {
  /**
   * Starts reading. Resolves once every resource has been read completely once (synced);
   * rejects when `stop()` is called first or, for a file, when the file cannot be read.
   */
  start(): Promise<void>;
  /** Stops every request, watch and timer; the objects read so far stay readable. */
  stop(): Promise<void>;
  /**
   * The current Nodes and Peers with `kind` and `apiVersion` set. A fresh array each call;
   * the objects themselves are shared and must not be mutated.
   */
  objects(): KubeObject[];
  /** Registers a listener called after every applied change (watch event, relist that changed something, patch). */
  onChange(listener: ChangeListener): void;
  /** True once every resource has been listed at least once. */
  synced(): boolean;
  /** Milliseconds since the epoch of the last successful list or watch event/bookmark; 0 before the first. */
  lastSync(): number;
  /**
   * Merges `annotations` into the node's metadata.annotations (a JSON merge patch: `null`
   * deletes a key). The change reaches `objects()` the way every other change does.
   * @throws Error naming the node when the patch is refused or cannot be sent.
   */
  patchNodeAnnotations(name: string, annotations: Record<string, string | null>): Promise<void>;
}

/**
 * The logging calls the backends make: pino's signature (merge object first), so a pino logger
 * fits as is. Messages never carry annotation values (they may be long) nor secrets.
 */
export interface Logger {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
};

/** The apiVersion/kind pairs a source hands out, so parseCluster can tell Nodes from Peers. */
export const NodeType = { apiVersion: 'v1', kind: 'Node' } as const;
export const PeerType = { apiVersion: 'kilo.squat.ai/v1alpha1', kind: 'Peer' } as const;

/** Applies a merge patch to an annotation map without touching the original; null deletes. */
export function mergeAnnotations(
  current: Readonly<Record<string, string>> | null | undefined,
  patch: Readonly<Record<string, string | null>>,
): Record<string, string> {
  const out: Record<string, string> = { ...(current ?? {}) };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = value;
  }
  return out;
}
