/**
 * Bool flags as Kilo's Go flags read them: `--flag` alone is true, `--flag=false` sets a value, and
 * the argument after a bare `--flag` is never taken as its value (`kgctl plan --local NODE`).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Command } from 'commander';
import { kgProgram } from '../../src/cli/kg.js';
import { kgctlProgram } from '../../src/cli/kgctl.js';
import { boolOption } from '../../src/cli/flags.js';
import { UsageError } from '../../src/model/errors.js';
import { ensureBuilt, example, kgctl } from './built.js';

/** Every command of both programs with its bool flags (a fresh program per call: values stick). */
function boolFlagCommands(): { path: string; flags: string[]; find: () => Command }[] {
  const out: { path: string; flags: string[]; find: () => Command }[] = [];
  // What boolOption writes after the flag's name ("--x [bool]" → " [bool]"), to recognise its options.
  const suffix = boolOption('x', '', false).flags.slice('--x'.length);
  const walk = (cmd: Command, route: string[], make: () => Command) => {
    const flags = cmd.options.filter((o) => o.long && o.flags === `${o.long}${suffix}`).map((o) => o.long!);
    const find = () => route.reduce((c, name) => c.commands.find((s) => s.name() === name)!, make());
    if (flags.length > 0) out.push({ path: [make().name(), ...route].join(' '), flags, find });
    for (const sub of cmd.commands) walk(sub, [...route, sub.name()], make);
  };
  walk(kgProgram(), [], kgProgram);
  walk(kgctlProgram(), [], kgctlProgram);
  return out;
}

const attribute = (flag: string) => flag.slice(2).replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase());

describe('bool flags', () => {
  const commands = boolFlagCommands();

  test('the programs have bool flags to check (kg run, kgctl plan, kgctl connect, …)', () => {
    const paths = commands.map((c) => c.path);
    for (const p of [
      'kg run',
      'kg multicluster',
      'kg webhook',
      'kgctl plan',
      'kgctl showconf',
      'kgctl showconf node',
      'kgctl connect',
    ])
      assert.ok(paths.includes(p), paths.join(', '));
    assert.ok(
      commands.every((c) =>
        ['--clean-up', '--local', '--as-peer', '--unlink', '--check-pod-cidrs'].some((f) => c.flags.includes(f)),
      ),
    );
  });

  for (const { path, flags, find } of commands) {
    test(`${path}: --flag alone is true and leaves the next argument a positional one`, () => {
      for (const flag of flags) {
        const cmd = find();
        const { operands, unknown } = cmd.parseOptions([flag, 'NODE', flag]);
        assert.deepEqual(operands, ['NODE'], `${path} ${flag} NODE`);
        assert.deepEqual(unknown, []);
        assert.equal(cmd.opts()[attribute(flag)], true, `${path} ${flag}`);
      }
    });

    test(`${path}: --flag=true|false|1|0 set the value`, () => {
      for (const flag of flags) {
        for (const [text, value] of [
          ['false', false],
          ['true', true],
          ['0', false],
          ['1', true],
          ['F', false],
          ['TRUE', true],
        ] as const) {
          const cmd = find();
          assert.deepEqual(cmd.parseOptions([`${flag}=${text}`, 'NODE']).operands, ['NODE']);
          assert.equal(cmd.opts()[attribute(flag)], value, `${path} ${flag}=${text}`);
        }
      }
    });

    test(`${path}: --flag=maybe and --flag false (a space, not Go's syntax) are errors naming flag and value`, () => {
      for (const flag of flags) {
        assert.throws(
          () => find().parseOptions([`${flag}=maybe`]),
          (e: unknown) => e instanceof UsageError && e.message === `${flag}: want true or false, got "maybe"`,
        );
        assert.throws(
          () => find().parseOptions([flag, 'false']),
          (e: unknown) =>
            e instanceof UsageError && e.message.includes(`${flag} false`) && e.message.includes(`${flag}=false`),
        );
      }
    });
  }

  test('a valued flag keeps an argument that looks like a bool flag', () => {
    const cmd = kgctlProgram().commands.find((c) => c.name() === 'plan')!;
    cmd.parseOptions(['--topology-label', '--local']);
    assert.equal(cmd.opts()['topologyLabel'], '--local');
    assert.equal(cmd.opts()['local'], true, 'the default, not set by the label value');
    const after = kgctlProgram().commands.find((c) => c.name() === 'plan')!;
    assert.deepEqual(
      after.parseOptions(['--', '--local', 'x']).operands,
      ['--local', 'x'],
      'after --, nothing is a flag',
    );
  });
});

describe('kgctl plan with bool flags (the built command)', () => {
  const plan = (...args: string[]) => {
    const r = kgctl('plan', ...args, '--cluster', example);
    assert.equal(r.stderr, '');
    assert.equal(r.status, 0);
    return JSON.parse(r.stdout) as unknown;
  };

  test('--local NODE plans NODE with --local on; --local=false NODE turns it off', () => {
    ensureBuilt();
    assert.deepEqual(plan('--local', 'gcp-use-2'), plan('gcp-use-2'));
    assert.deepEqual(plan('--local=false', 'gcp-use-2'), plan('gcp-use-2', '--local=false'));
    assert.notDeepEqual(plan('--local=false', 'gcp-use-2'), plan('gcp-use-2'));
  });

  test('--local false: one line naming the flag, the value and the form to use', () => {
    ensureBuilt();
    const r = kgctl('plan', 'gcp-use-2', '--local', 'false', '--cluster', example);
    assert.equal(r.status, 1);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr.trimEnd().split('\n').length, 1, r.stderr);
    assert.match(r.stderr, /^kgctl: --local false: .*--local=false/);
  });
});
