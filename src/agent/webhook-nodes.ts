/**
 * What `kg webhook` knows of the Nodes: their pod CIDRs, from a Node reader (backend/kubernetes'
 * KubernetesNodes), indexed again only when a pod CIDR changed and a review asks.
 */
import type { ValidationError } from '../model/errors.js';
import type { KubeObject } from '../model/parse.js';
import type { ChangeListener } from '../backend/source.js';
import { PodCIDRIndex } from './pod-cidr-overlaps.js';

/** The part of a Node reader the webhook uses. */
export interface NodeReader {
  objects(): KubeObject[];
  onChange(listener: ChangeListener): void;
  /** True once the Nodes have been listed at least once. */
  synced(): boolean;
}

export class NodePodCIDRs {
  private index: PodCIDRIndex | undefined;

  constructor(private readonly reader: NodeReader) {
    reader.onChange((update) => {
      // Most changes are annotations (heartbeats, endpoints); the normalised Node keeps the same
      // spec object when its pod CIDRs did not change, so those leave the index alone.
      if (update && update.previous.spec === update.current.spec) return;
      this.index = undefined;
    });
  }

  /**
   * Whether the Nodes have been listed. Before, a review cannot judge pod CIDRs; after, it
   * answers from the last list and the watch events since, also while the API server is away.
   */
  synced(): boolean {
    return this.reader.synced();
  }

  /** The errors of each allowed IP of the Peer that overlaps a node's pod CIDR. */
  overlaps(name: string, spec: unknown): ValidationError[] {
    this.index ??= new PodCIDRIndex(this.reader.objects());
    return this.index.overlaps(name, spec);
  }
}
