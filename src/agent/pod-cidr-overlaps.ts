/**
 * The webhook's check of a Peer against the Nodes' pod CIDRs: an allowed IP that overlaps a
 * node's pod CIDR (of either family, containing it or inside it) would take that node's pods'
 * traffic. The agents drop such a claim anyway (mesh/conflicts.ts); the webhook refuses it up
 * front, naming the Peer, the field, the value and the node. Pure: the Nodes come in as objects.
 */
import { ValidationError } from '../model/errors.js';
import type { KubeObject } from '../model/parse.js';
import { Cidr } from '../net/cidr.js';
import { PrefixClaims } from '../mesh/conflicts.js';

interface PodCIDR {
  node: string;
  /** As the Node writes it (masked: what the refusal names). */
  cidr: string;
}

/** A refusal names this many overlapping allowed IPs at most: enough to fix the Peer. */
const maxOverlaps = 8;

/** Every Node's pod CIDRs, for overlap look-ups in time proportional to a prefix's length. */
export class PodCIDRIndex {
  private readonly claims = new PrefixClaims<PodCIDR>();
  /** Pod CIDRs indexed. */
  readonly size: number;

  /**
   * Indexes spec.podCIDR and every spec.podCIDRs entry of each Node. What does not parse as a
   * CIDR, or is a catch-all, is left out: the agents drop such a Node (model/parse.ts), and a
   * catch-all would refuse every Peer.
   */
  constructor(nodes: readonly KubeObject[]) {
    let size = 0;
    for (const n of nodes) {
      const name = n.metadata?.name;
      const spec = n.spec;
      if (!name || !spec) continue;
      const list = Array.isArray(spec['podCIDRs']) ? (spec['podCIDRs'] as unknown[]) : [];
      for (const value of [spec['podCIDR'], ...list]) {
        if (typeof value !== 'string') continue;
        const c = Cidr.tryParse(value.trim());
        if (!c || c.prefix === 0) continue;
        this.claims.claim(c, { node: name, cidr: c.networkText });
        size++;
      }
    }
    this.size = size;
  }

  /** The node and pod CIDR a prefix overlaps, if any (the first indexed). */
  find(c: Cidr): PodCIDR | null {
    return this.claims.find(c);
  }

  /**
   * One error per allowed IP of the Peer `spec` (of Peer `name`) that overlaps a node's pod
   * CIDR. Values that are not CIDRs, and catch-alls, are parsePeer's to refuse: skipped here.
   */
  overlaps(name: string, spec: unknown): ValidationError[] {
    const allowed = (spec as { allowedIPs?: unknown } | null)?.allowedIPs;
    if (!Array.isArray(allowed) || this.size === 0) return [];
    const errors: ValidationError[] = [];
    for (let i = 0; i < allowed.length && errors.length < maxOverlaps; i++) {
      const value: unknown = allowed[i];
      if (typeof value !== 'string') continue;
      const c = Cidr.tryParse(value.trim());
      if (!c || c.prefix === 0) continue;
      const held = this.find(c);
      if (held)
        errors.push(
          new ValidationError(
            `Peer ${JSON.stringify(name)}`,
            `spec.allowedIPs[${i}]`,
            value,
            `overlaps the pod CIDR ${held.cidr} of Node ${JSON.stringify(held.node)}`,
          ),
        );
    }
    return errors;
  }
}
