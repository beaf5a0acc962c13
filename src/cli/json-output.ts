/**
 * `JSON.stringify(value, null, 2)` and a newline, handed to `write` in pieces: the long arrays of
 * a big plan (peers, routes, guard) a few hundred elements at a time. Written whole, the 16 MB of a
 * 20,000-node plan lived in the young generation while it was built (copied by each scavenge, then
 * promoted) and was copied once more to be flattened for the write; in pieces written as they are
 * made, each dies young (docs/performance.md, "kgctl plan at 5,000 nodes, phase by phase").
 *
 * The text is the same byte for byte: each piece is JSON.stringify's own output for a one-key
 * object holding the property (or a slice of the array) at the same depth, so indentation, escapes
 * and the properties JSON.stringify leaves out (undefined, functions) are its own. For plain data:
 * a value with a toJSON method is handed whole to JSON.stringify; an array element's toJSON would
 * be called with its index within the piece, so plans (plain data) are what this is for.
 */

/**
 * `value` on stdout as `JSON.stringify(value, null, 2)` and a newline, in pieces. A pipe is made
 * blocking first, as Node makes a terminal: on a non-blocking one, a piece the reader has not taken
 * yet waits in the stream's buffer, alive, and the next pieces queue behind it.
 */
export function printIndentedJson(value: unknown): void {
  const stdout = process.stdout as unknown as { _handle?: { setBlocking?: (blocking: boolean) => number } };
  stdout._handle?.setBlocking?.(true);
  writeIndentedJson(value, (text) => process.stdout.write(text));
}

/** Elements of a top-level array per piece: ~50-100 KB of a plan's text. */
const elementsPerPiece = 256;

export function writeIndentedJson(value: unknown, write: (text: string) => void): void {
  if (!isPlainObject(value)) {
    write(`${JSON.stringify(value, null, 2)}\n`);
    return;
  }
  let first = true;
  for (const key of Object.keys(value)) {
    const v = value[key];
    const before = first ? '{\n' : ',\n';
    if (Array.isArray(v) && v.length > elementsPerPiece && !('toJSON' in v)) {
      first = false;
      write(`${before}  ${JSON.stringify(key)}: [\n`);
      for (let i = 0; i < v.length; i += elementsPerPiece) {
        // `{ "k": [ …elements at depth 2… ] }`: the elements as they stand in the whole text.
        const text = JSON.stringify({ k: v.slice(i, i + elementsPerPiece) }, null, 2);
        const elements = text.slice(arrayHead.length, text.length - arrayTail.length);
        write(i === 0 ? elements : `,\n${elements}`);
      }
      write('\n  ]');
      continue;
    }
    // `{ "key": … }`: the property's line(s) as they stand in the whole text, or `{}` when
    // JSON.stringify leaves it out.
    const text = JSON.stringify({ [key]: v }, null, 2);
    if (text === '{}') continue;
    first = false;
    write(before + text.slice(2, text.length - 2));
  }
  write(first ? '{}\n' : '\n}\n');
}

const arrayHead = '{\n  "k": [\n';
const arrayTail = '\n  ]\n}';

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    Object.getPrototypeOf(value) === Object.prototype &&
    !('toJSON' in value)
  );
}
