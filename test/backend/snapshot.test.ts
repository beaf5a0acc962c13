import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { loadSnapshot, maxSnapshotBytes, parseSnapshot } from '../../src/backend/snapshot.js';
import { UsageError } from '../../src/model/errors.js';
import { node } from '../helpers/cluster.js';

const dir = mkdtempSync(join(tmpdir(), 'kts-snapshot-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A user error of one line that names the file. */
function oneLineError(f: () => unknown, file: string, pattern: RegExp): void {
  assert.throws(f, (e: unknown) => {
    assert.ok(e instanceof UsageError, `not a UsageError: ${String(e)}`);
    assert.ok(!e.message.includes('\n'), `more than one line: ${e.message}`);
    assert.ok(e.message.includes(file), `does not name ${file}: ${e.message}`);
    assert.match(e.message, pattern);
    return true;
  });
}

describe('cluster snapshots', () => {
  const list = { apiVersion: 'v1', kind: 'List', items: [node('a'), node('b')] };

  test('JSON and YAML of the same List give the same objects; a List in a List is flattened', () => {
    const fromJSON = parseSnapshot(JSON.stringify(list), 'c.json');
    assert.deepEqual(
      fromJSON.map((o) => o.metadata?.name),
      ['a', 'b'],
    );
    const yaml = `apiVersion: v1\nkind: List\nitems:\n${list.items.map((o) => `- ${JSON.stringify(o)}`).join('\n')}\n`;
    assert.deepEqual(parseSnapshot(yaml, 'c.yaml'), fromJSON);
    // JSON text without a .json name is still read as JSON; YAML's multi-document form as YAML.
    assert.deepEqual(parseSnapshot(` \n${JSON.stringify({ kind: 'List', items: [list] })}`, 'snapshot'), fromJSON);
    const docs = list.items.map((o) => JSON.stringify(o)).join('\n---\n');
    assert.deepEqual(parseSnapshot(docs, 'snapshot'), fromJSON);
  });

  test('broken JSON is a JSON error, not a YAML one', () => {
    oneLineError(() => parseSnapshot('{"kind": "List", "items": [}', 'c.json'), 'c.json', /is not valid JSON: /);
    oneLineError(() => parseSnapshot('{"kind": "List",\n\n"items": [}', 'snap'), 'snap', /is not valid JSON: /);
  });

  test("YAML's alias bomb and a document nested past the parser's stack are refused in one line", () => {
    const lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
    for (let i = 1; i < 12; i++) {
      const prev = String.fromCharCode(96 + i);
      const name = String.fromCharCode(97 + i);
      lines.push(`${name}: &${name} [${Array(9).fill(`*${prev}`).join(',')}]`);
    }
    oneLineError(() => parseSnapshot(lines.join('\n'), 'bomb.yaml'), 'bomb.yaml', /not valid YAML or JSON: .*alias/i);
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    oneLineError(() => parseSnapshot(deep, 'deep.yaml'), 'deep.yaml', /not valid YAML or JSON: nested too deeply/);
  });

  test('Lists nested deeper than any snapshot, and non-objects, are refused', () => {
    let nested: unknown = node('a');
    for (let i = 0; i < 20; i++) nested = { kind: 'List', items: [nested] };
    oneLineError(() => parseSnapshot(JSON.stringify(nested), 'n.json'), 'n.json', /nests Lists more than 8 deep/);
    oneLineError(() => parseSnapshot('[1,2]', 'arr.json'), 'arr.json', /holds a bare array, not Kubernetes objects/);
    oneLineError(() => parseSnapshot('42', 'n.yaml'), 'n.yaml', /holds 42, not Kubernetes objects/);
  });

  test('a file larger than a snapshot may be is refused before it is read', () => {
    const big = join(dir, 'big.json');
    writeFileSync(big, '');
    truncateSync(big, maxSnapshotBytes + 1);
    oneLineError(() => loadSnapshot(big), big, /is 256 MB, more than the 256 MB a snapshot may be/);
  });
});
