import type { Family } from '../../net/cidr.js';

/**
 * What is kept of a text iproute2 printed, to tell the next read's from it: a digest, not the text.
 * At 20,000 nodes a route read is megabytes, and a copy of it kept only for that comparison was the
 * largest single object of the agent's heap (docs/performance.md). SHA-256 of 6.6 MB takes ~5 ms here,
 * a twentieth of the parse it saves; two texts with the same digest are taken as the same text. A
 * reader's first read is not digested: there is nothing to compare it with, and a reader that reads
 * once need not compare at all.
 */
export function textDigest(text: string): string {
  // node:crypto when first needed (~10 ms to load): a reader digests from its second read on, so kg
  // apply, which reads once, loads none (test/imports.test.ts).
  return process.getBuiltinModule('node:crypto').createHash('sha256').update(text).digest('base64');
}

/**
 * One family's `ip -N -j route show` text of one read, shared by the reader's parse (parseRoutes)
 * and Kilo's next hops (nexthops.ts). The reader's parse, which comes first in a pass, records the
 * next hop of each route printed by `nhid`, so a changed read is parsed once; the next hops parse
 * the text themselves only when no parse came first (a pass that diffed against its last write).
 * Lives as long as its read (one pass).
 */
export class PrintedRoutes {
  private digestNow: string | null = null;
  /** The id of each route printed with `nhid`, by routeKey, once a parse of `json` has found them. */
  nhids: Map<string, number> | null = null;

  constructor(
    readonly family: Family,
    readonly json: string,
  ) {}

  get digest(): string {
    return (this.digestNow ??= textDigest(this.json));
  }
}

/** One digest for a read's route texts of every family, in order. */
export function routesDigest(texts: readonly PrintedRoutes[]): string {
  return texts.map((t) => `${t.family}:${t.digest}`).join(' ');
}
