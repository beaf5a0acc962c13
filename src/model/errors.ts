/** How much of a rejected value an error shows: enough to find it, never a megabyte in a log line. */
export const maxShownValue = 100;

/** Fields whose value is a secret: an error says it is wrong, never what it is. */
const secretField = /presharedKey|privateKey|preshared-key|private-key/i;

export const withheld = '(value withheld: it is a secret)';

/**
 * A rejected value as an error shows it: primitives as they are (strings cut to `max` characters),
 * objects and arrays as a bounded sketch. Never recurses deeper than a few levels, so a value nested
 * 50,000 deep costs as little as a flat one.
 */
export function shownValue(value: unknown, max = maxShownValue): string | number | boolean | null {
  switch (typeof value) {
    case 'string':
      return value.length > max ? `${value.slice(0, max)}…` : value;
    case 'number':
    case 'boolean':
      return value;
    case 'undefined':
      return null;
    case 'bigint':
    case 'symbol':
    case 'function':
      return `(${typeof value})`;
    default:
      if (value === null) return null;
      return cut(sketch(value, 3, max + 1), max);
  }
}

/** A value as a message quotes it: shownValue's primitives as JSON (so "5" and 5 differ), objects as their sketch. */
export function showValue(value: unknown, max = maxShownValue): string {
  const shown = shownValue(value, max);
  return typeof value === 'object' && value !== null ? String(shown) : JSON.stringify(shown);
}

function cut(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max)}…` : s;
}

/** A JSON-like sketch of an object, at most `depth` levels and about `budget` characters. */
function sketch(value: unknown, depth: number, budget: number): string {
  if (typeof value !== 'object' || value === null) {
    const s = typeof value === 'string' ? JSON.stringify(cut(value, budget)) : String(value);
    return cut(s, budget);
  }
  if (depth === 0) return Array.isArray(value) ? '[…]' : '{…}';
  const parts: string[] = [];
  let used = 2;
  const entries: [string | null, unknown][] = Array.isArray(value)
    ? value.map((v) => [null, v])
    : Object.keys(value).map((k) => [k, (value as Record<string, unknown>)[k]]);
  for (const [k, v] of entries) {
    if (used >= budget) {
      parts.push('…');
      break;
    }
    const shown = k !== null && secretField.test(k) ? JSON.stringify(withheld) : sketch(v, depth - 1, budget - used);
    const part = k === null ? shown : `${JSON.stringify(cut(k, 40))}:${shown}`;
    parts.push(part);
    used += part.length + 1;
  }
  return Array.isArray(value) ? `[${parts.join(',')}]` : `{${parts.join(',')}}`;
}

/**
 * A value in a cluster object that cannot be used. It names the object, the field and the
 * value, so an operator can find and fix it; the object drops out of the mesh, nothing else does.
 * `value` is already cut to about 100 characters (and withheld for secrets): it is safe to log.
 */
export class ValidationError extends Error {
  readonly value: string | number | boolean | null;
  readonly object: string;
  readonly field: string;
  readonly reason: string;

  constructor(object: string, field: string, value: unknown, reason: string) {
    const shownObject = cut(object, maxShownValue + 20);
    const shownField = cut(field, maxShownValue + 60);
    const secret = secretField.test(field);
    const shown = secret ? withheld : shownValue(value);
    const shownReason = cut(reason, 2 * maxShownValue);
    const text = secret ? JSON.stringify(withheld) : showValue(value);
    super(`${shownObject}: field ${shownField}: ${shownReason}: ${text}`);
    this.name = 'ValidationError';
    this.object = shownObject;
    this.field = shownField;
    this.value = shown;
    this.reason = shownReason;
  }
}

/**
 * An error's message as one line, cut to `max` characters: lines joined by a space, or with
 * `firstLine` only the first (a parser's message whose later lines quote the input back).
 */
export function oneLine(e: unknown, max = 300, firstLine = false): string {
  const message = e instanceof Error ? e.message : String(e);
  const text = firstLine ? message.split('\n')[0]!.trim() : message.replace(/\s*\n\s*/g, ' ').trim();
  return cut(text, max);
}

/** A mistake of the user's (a bad flag, a missing file): printed as one line, no stack trace. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
