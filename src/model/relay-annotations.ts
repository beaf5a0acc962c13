import { Annotation } from './annotations.js';
import { ValidationError } from './errors.js';
import { parseMeshFlags } from './mesh-flags.js';
import type { RelayRole } from './types.js';

/**
 * kilo.squat.ai/unreachable holds at most this many bytes (node names are ASCII: characters), some
 * 250 names of 30 characters: 5 % of a 5,000-node mesh's peers. A size, not a count, because what
 * it costs is bytes: every agent watches every Node, and each heartbeat of a node sends its whole
 * object to all of them, so the annotation stays a small part of a Node (Kubernetes allows 256 KiB
 * of annotations in all). A node that cannot reach more of its peers than that is better served as
 * a spoke (kilo.squat.ai/spoke: it peers with one hub, everything else through it) than by a relay
 * per pair (docs/relays.md#hub-and-spoke).
 */
export const maxUnreachableBytes = 8192;

const nodeName = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

/**
 * The annotation's value: node names, sorted, comma-separated, as many as fit in
 * maxUnreachableBytes (the first in sorted order, so every run publishes the same); null (removed)
 * for none.
 */
export function formatUnreachable(names: readonly string[]): string | null {
  if (names.length === 0) return null;
  const sorted = [...new Set(names)].sort();
  let bytes = -1;
  let n = 0;
  while (n < sorted.length && bytes + 1 + sorted[n]!.length <= maxUnreachableBytes) bytes += 1 + sorted[n++]!.length;
  return sorted.slice(0, n).join(',');
}

/** Reads kilo.squat.ai/unreachable: a list of node names, or an error naming the node, the field and the value. */
export function parseUnreachable(text: string, object: string): string[] | ValidationError {
  const field = `metadata.annotations["${Annotation.unreachable}"]`;
  if (text.length > maxUnreachableBytes)
    return new ValidationError(
      object,
      field,
      text,
      `longer than ${maxUnreachableBytes} bytes (${text.length}): a node that cannot reach that many peers is better made a spoke`,
    );
  const names = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const bad = names.find((n) => !nodeName.test(n));
  if (bad !== undefined) return new ValidationError(object, field, text, `${JSON.stringify(bad)} is not a node name`);
  return names;
}

/**
 * A node's relay role from its annotations: none without a kilo-ts agent's mesh-flags announcement
 * (Kilo's agent neither relays nor is relayed through); `never` when the agent announces
 * --relay=false (it wins over the operator's mark) or the operator marks it "false"; `prefer` when
 * the operator marks it "true". The announcement is read only when it mentions relay at all, so
 * the thousands of nodes without the flag cost no JSON parse.
 */
export function relayRole(
  annotations: Readonly<Record<string, string>>,
  nodeName: string,
): RelayRole | undefined | ValidationError {
  const flags = annotations[Annotation.meshFlags];
  if (flags === undefined) return undefined;
  // The node's label is made for an error only: every node of a kilo-ts mesh comes through here.
  const object = () => `Node ${JSON.stringify(nodeName)}`;
  if (flags.includes('"relay"')) {
    const parsed = parseMeshFlags(flags, object());
    if (!(parsed instanceof ValidationError) && parsed.relay === false) return 'never';
  }
  const mark = annotations[Annotation.relay];
  if (mark === undefined) return 'allow';
  const v = mark.trim().toLowerCase();
  if (v === 'true') return 'prefer';
  if (v === 'false') return 'never';
  return new ValidationError(object(), `metadata.annotations["${Annotation.relay}"]`, mark, 'not "true" or "false"');
}

/** kilo.squat.ai/spoke: "true" or "false" (absent: false); another value is an error naming the field. */
export function parseSpoke(text: string, object: string): boolean | ValidationError {
  const v = text.trim().toLowerCase();
  if (v === 'true' || v === 'false') return v === 'true';
  return new ValidationError(object, `metadata.annotations["${Annotation.spoke}"]`, text, 'not "true" or "false"');
}
