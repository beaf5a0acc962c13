import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import { nodeCommand, nodeFlags, nodeLaunch } from '../scripts/node-flags.mjs';

const root = join(import.meta.dirname, '..');
const dir = mkdtempSync(join(tmpdir(), 'kilo-node-flags-'));
after(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
/** Started with no environment but PATH, it is what the #! line sets. */
const onlyPath = { PATH: `${dirname(process.execPath)}:/usr/bin:/bin` };

/** A launcher whose first line is `line`, printing what node got: its environment but PATH, its flags, its arguments. */
function launcher(line: string): string {
  const path = join(dir, `launcher-${n++}`);
  const body = `const { PATH, ...env } = process.env;
console.log(JSON.stringify({ env, flags: process.execArgv, args: process.argv.slice(2) }));\n`;
  writeFileSync(path, `${line}\n${body}`, { mode: 0o755 });
  return path;
}

describe("a launcher's #! line (scripts/node-flags.mjs)", () => {
  test('env -S: the assignments before node are its environment, the words after it its flags', () => {
    const l = launcher(
      '#!/usr/bin/env -S KILO_NF_A=2 KILO_NF_B_=131072 node --max-semi-space-size=4 --no-memory-reducer',
    );
    assert.deepEqual(nodeLaunch(l), {
      envPath: '/usr/bin/env',
      env: { KILO_NF_A: '2', KILO_NF_B_: '131072' },
      flags: ['--max-semi-space-size=4', '--no-memory-reducer'],
    });
    assert.deepEqual(nodeFlags(l), ['--max-semi-space-size=4', '--no-memory-reducer']);
  });

  test('flags without assignments, and plain node', () => {
    assert.deepEqual(nodeLaunch(launcher('#!/usr/bin/env -S node --stack-size=900')), {
      envPath: '/usr/bin/env',
      env: {},
      flags: ['--stack-size=900'],
    });
    assert.deepEqual(nodeLaunch(launcher('#!/usr/bin/env node')), { envPath: '/usr/bin/env', env: {}, flags: [] });
  });

  test('what it cannot read as env -S would is an error naming the launcher and its line', () => {
    for (const [line, why] of [
      ['#!/bin/sh', /does not run node through env/],
      ['// no #! line', /does not run node through env/],
      ['#!/usr/bin/env python3', /does not run node/],
      ['#!/usr/bin/env -S KILO_NF_A=1 python3', /does not run node/],
      ['#!/usr/bin/env node --no-memory-reducer', /more than one word without env -S/],
      ['#!/usr/bin/env -S KILO_NF_A="1 2" node', /"KILO_NF_A=\\"1"/],
      ['#!/usr/bin/env -S KILO_NF_A=${HOME} node', /\$\{HOME\}/],
    ] as const) {
      const l = launcher(line);
      assert.throws(
        () => nodeLaunch(l),
        (e: Error) => e.message.startsWith(`${l}: its first line`) && why.test(e.message),
      );
    }
  });

  test('nodeCommand runs the launcher with what its #! line gives it, as the kernel would run it', () => {
    const l = launcher(
      '#!/usr/bin/env -S KILO_NF_A=2 KILO_NF_B_=131072 node --max-semi-space-size=4 --no-memory-reducer',
    );
    const [file, ...args] = nodeCommand(l);
    const through = spawnSync(file, [...args, 'x', 'y z'], { encoding: 'utf8', env: {} });
    const direct = spawnSync(l, ['x', 'y z'], { encoding: 'utf8', env: onlyPath });
    assert.equal(through.status, 0, through.stderr);
    assert.equal(direct.status, 0, direct.stderr);
    const expected = {
      env: { KILO_NF_A: '2', KILO_NF_B_: '131072' },
      flags: ['--max-semi-space-size=4', '--no-memory-reducer'],
      args: ['x', 'y z'],
    };
    assert.deepEqual(JSON.parse(through.stdout), expected);
    assert.deepEqual(JSON.parse(direct.stdout), expected);
  });

  test('nodeCommand: node straight when the line sets no environment; `rest` in place of the launcher', () => {
    const l = launcher('#!/usr/bin/env -S node --no-memory-reducer');
    assert.deepEqual(nodeCommand(l), [process.execPath, '--no-memory-reducer', l]);
    assert.deepEqual(nodeCommand(l, ['--import', 'x', l]), [
      process.execPath,
      '--no-memory-reducer',
      '--import',
      'x',
      l,
    ]);
  });

  test("bin/kg's line: within what Linux reads of a #! line, and run by the kernel and env -S as nodeLaunch reads it", () => {
    const line = readFileSync(join(root, 'bin', 'kg'), 'utf8').split('\n', 1)[0]!;
    // Linux reads 256 bytes of a #! line since 5.1 (BINPRM_BUF_SIZE), 128 before, and cuts the rest:
    // the userspace manifests run on kernels older than that.
    assert.ok(Buffer.byteLength(line) <= 127, `${Buffer.byteLength(line)} bytes: ${line}`);
    const { env, flags } = nodeLaunch(join(root, 'bin', 'kg'));
    assert.ok(Object.keys(env).length > 0 && flags.length > 0, line);
    // The same line over a launcher that prints what it got.
    const r = spawnSync(launcher(line), [], { encoding: 'utf8', env: onlyPath });
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { env, flags, args: [] });
  });
});
