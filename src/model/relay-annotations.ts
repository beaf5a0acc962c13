import { Annotation } from './annotations.js';
import { ValidationError } from './errors.js';
import { parseMeshFlags } from './mesh-flags.js';
import type { RelayRole } from './types.js';

/**
 * kilo.squat.ai/unreachable lists at most this many nodes: a node that cannot reach more of its
 * peers has a problem a relay does not mend, and the annotation stays under 4 KiB (names ≤ 253).
 */
export const maxUnreachable = 16;

const nodeName = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

/** The annotation's value: node names, sorted, comma-separated; null (removed) for none. */
export function formatUnreachable(names: readonly string[]): string | null {
  if (names.length === 0) return null;
  return [...new Set(names)].sort().slice(0, maxUnreachable).join(',');
}

/** Reads kilo.squat.ai/unreachable: a list of node names, or an error naming the node, the field and the value. */
export function parseUnreachable(text: string, object: string): string[] | ValidationError {
  const field = `metadata.annotations["${Annotation.unreachable}"]`;
  const names = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (names.length > maxUnreachable)
    return new ValidationError(object, field, text, `more than ${maxUnreachable} node names`);
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
  object: string,
): RelayRole | undefined | ValidationError {
  const flags = annotations[Annotation.meshFlags];
  if (flags === undefined) return undefined;
  if (flags.includes('"relay"')) {
    const parsed = parseMeshFlags(flags, object);
    if (!(parsed instanceof ValidationError) && parsed.relay === false) return 'never';
  }
  const mark = annotations[Annotation.relay];
  if (mark === undefined) return 'allow';
  const v = mark.trim().toLowerCase();
  if (v === 'true') return 'prefer';
  if (v === 'false') return 'never';
  return new ValidationError(object, `metadata.annotations["${Annotation.relay}"]`, mark, 'not "true" or "false"');
}

/** kilo.squat.ai/spoke: "true" or "false" (absent: false); another value is an error naming the field. */
export function parseSpoke(text: string, object: string): boolean | ValidationError {
  const v = text.trim().toLowerCase();
  if (v === 'true' || v === 'false') return v === 'true';
  return new ValidationError(object, `metadata.annotations["${Annotation.spoke}"]`, text, 'not "true" or "false"');
}
