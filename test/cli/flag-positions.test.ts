/**
 * Where kgctl's flags go, as in Kilo's kgctl (cobra): the root's flags (--kubeconfig, --backend,
 * --mesh-granularity, --port, --topology-label) before or after the subcommand, showconf's
 * (--as-peer, -o/--output, --allowed-ips) after `showconf`, before or after `node NAME`, each as
 * `--flag value` or `--flag=value`, with the same meaning. The commands' actions are replaced by one
 * that records what the command would run with: nothing is read or connected.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CommanderError, type Command } from 'commander';
import { kgctlProgram } from '../../src/cli/kgctl.js';
import { kgctlGlobalFlags, showconfFlags } from '../../src/cli/shared-flags.js';

interface Seen {
  path: string;
  args: unknown[];
  opts: Record<string, unknown>;
  sources: Record<string, string | undefined>;
}

/** Parses `argv` as kgctl would; the leaf that would run, its arguments, options and their sources. */
async function parse(argv: string[]): Promise<Seen> {
  const program = kgctlProgram();
  let seen: Seen | undefined;
  const stub = (cmd: Command, path: string) => {
    if (cmd.commands.length === 0)
      cmd.action((...args: unknown[]) => {
        const opts = cmd.opts();
        const sources: Record<string, string | undefined> = {};
        for (const key of Object.keys(opts)) sources[key] = cmd.getOptionValueSource(key);
        seen = { path, args: args.slice(0, -2), opts, sources };
      });
    for (const sub of cmd.commands) stub(sub, `${path} ${sub.name()}`.trim());
  };
  stub(program, '');
  const quiet = (cmd: Command) => {
    cmd.exitOverride().configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
    cmd.commands.forEach(quiet);
  };
  quiet(program);
  await program.parseAsync(argv, { from: 'user' });
  assert.ok(seen, `nothing ran for ${argv.join(' ')}`);
  return seen;
}

/** The error kgctl stops with for `argv`. */
async function failure(argv: string[]): Promise<string> {
  try {
    await parse(argv);
  } catch (e) {
    if (e instanceof CommanderError || e instanceof Error) return e.message;
  }
  assert.fail(`${argv.join(' ')}: no error`);
}

/** A value for each shared flag other than its default, and the option it sets. */
const samples: Record<string, { value: string; key: string }> = {
  '--kubeconfig': { value: '/tmp/kubeconfig-1', key: 'kubeconfig' },
  '--backend': { value: 'kubernetes', key: 'backend' },
  '--mesh-granularity': { value: 'full', key: 'meshGranularity' },
  '--port': { value: '51821', key: 'port' },
  '--topology-label': { value: 'example.com/zone', key: 'topologyLabel' },
  '--log-level': { value: 'debug', key: 'logLevel' },
  '--output': { value: 'yaml', key: 'output' },
  '--allowed-ips': { value: '10.43.0.0/16', key: 'allowedIps' },
};

/** Every command that runs, with the arguments it takes. */
const leaves: { path: string[]; args: string[] }[] = [
  { path: ['plan'], args: ['a'] },
  { path: ['showconf', 'node'], args: ['a'] },
  { path: ['showconf', 'peer'], args: ['p'] },
  { path: ['graph'], args: [] },
  { path: ['connect'], args: ['laptop'] },
];

/** The same flag every way Kilo's kgctl takes it, as argv pieces. */
function spellings(flag: string, value: string): string[][] {
  return [[flag, value], [`${flag}=${value}`]];
}

describe('kgctl flag positions', () => {
  test("the shared flags are Kilo's kgctl's root and showconf flags", async () => {
    const program = kgctlProgram();
    const longs = program.options.map((o) => o.long);
    for (const f of ['--kubeconfig', '--backend', '--mesh-granularity', '--port', '--topology-label'])
      assert.ok(longs.includes(f), f);
    const showconf = program.commands.find((c) => c.name() === 'showconf')!;
    for (const f of ['--as-peer', '--output', '--allowed-ips'])
      assert.ok(
        showconf.options.some((o) => o.long === f),
        f,
      );
    assert.equal(showconf.options.find((o) => o.long === '--output')?.short, '-o');
  });

  for (const flag of kgctlGlobalFlags) {
    const { value, key } = samples[flag]!;
    for (const { path, args } of leaves) {
      test(`${flag} before, between and after \`${path.join(' ')}\`, with a space or "=": one meaning`, async () => {
        const afterForm = await parse([...path, ...args, flag, value]);
        assert.equal(afterForm.path, path.join(' '));
        assert.equal(afterForm.sources[key], 'cli');
        if (flag !== '--backend') assert.notDeepEqual(afterForm.opts[key], (await parse([...path, ...args])).opts[key]);
        const forms: string[][] = [];
        for (const s of spellings(flag, value)) {
          forms.push([...s, ...path, ...args], [...path, ...args, ...s]);
          // Between the words of a two-word command (`showconf --kubeconfig K node N`), as cobra takes it.
          if (path.length > 1) forms.push([path[0]!, ...s, ...path.slice(1), ...args]);
        }
        for (const argv of forms) {
          const seen = await parse(argv);
          assert.equal(seen.path, path.join(' '), argv.join(' '));
          assert.deepEqual(seen.args, afterForm.args, argv.join(' '));
          assert.deepEqual(seen.opts[key], afterForm.opts[key], argv.join(' '));
          // Given, not defaulted: an agent's announcement does not override it (explicitFlags).
          assert.equal(seen.sources[key], 'cli', argv.join(' '));
        }
      });
    }
  }

  for (const flag of showconfFlags) {
    for (const name of ['node', 'peer']) {
      test(`showconf ${flag} before or after \`${name} NAME\`, with a space or "=": one meaning`, async () => {
        const valued = flag === '--as-peer' ? [] : spellings(flag, samples[flag]!.value);
        const key = flag === '--as-peer' ? 'asPeer' : samples[flag]!.key;
        // --allowed-ips only goes with --as-peer; the others need nothing else.
        const rest = flag === '--as-peer' ? [] : ['--as-peer'];
        const spelled = flag === '--as-peer' ? [['--as-peer'], ['--as-peer=true']] : valued;
        if (flag === '--output') spelled.push(['-o', 'yaml'], ['-o=yaml']);
        const afterForm = await parse(['showconf', name, 'N', ...rest, ...spelled[0]!]);
        assert.notDeepEqual(afterForm.opts[key], (await parse(['showconf', name, 'N'])).opts[key]);
        for (const s of spelled) {
          for (const argv of [
            ['showconf', ...s, name, 'N', ...rest],
            ['showconf', name, ...s, 'N', ...rest],
            ['showconf', name, 'N', ...rest, ...s],
          ]) {
            const seen = await parse(argv);
            assert.deepEqual(seen.args, ['N'], argv.join(' '));
            assert.deepEqual(seen.opts[key], afterForm.opts[key], argv.join(' '));
            assert.equal(seen.sources[key], 'cli', argv.join(' '));
          }
        }
        // Not before `showconf`: as in Kilo, the root has no such flag.
        assert.match(
          await failure([...spelled[0]!, 'showconf', name, 'N']),
          new RegExp(`unknown option '${flag.startsWith('-o') ? '-o' : spelled[0]![0]!.split('=')[0]}'`),
        );
      });
    }
  }

  test('given twice, the later wins; --allowed-ips collects in command-line order', async () => {
    const port = await parse(['--port', '1', 'plan', 'a', '--port=2']);
    assert.equal(port.opts['port'], 2);
    const ips = await parse([
      'showconf',
      '--allowed-ips=10.1.0.0/16',
      'node',
      '--allowed-ips',
      '10.2.0.0/16,10.3.0.0/16',
      'N',
      '--as-peer',
    ]);
    assert.deepEqual((ips.opts['allowedIps'] as { toString(): string }[]).map(String), [
      '10.1.0.0/16',
      '10.2.0.0/16',
      '10.3.0.0/16',
    ]);
  });

  test('--as-peer=false reads as false; --as-peer false is an error, not a silent flip', async () => {
    assert.equal((await parse(['showconf', 'node', 'N', '--as-peer=false'])).opts['asPeer'], false);
    assert.match(await failure(['showconf', 'node', '--as-peer', 'false']), /--as-peer=false/);
  });

  test("e2e/kgctl.sh and docs/kgctl.md: connect's forms", async () => {
    // `kgctl --kubeconfig /kubeconfig connect "$PEER" --allowed-ip "$ALLOWED_IP"` (e2e/kgctl.sh)
    const named = await parse(['--kubeconfig', '/kubeconfig', 'connect', 'alice', '--allowed-ip', '10.5.0.1/32']);
    assert.deepEqual(named.args, ['alice']);
    assert.equal(named.opts['kubeconfig'], '/kubeconfig');
    assert.equal(named.opts['allowedIp'], '10.5.0.1/32');
    // Without a name: this host's (e2e/kgctl.sh).
    const unnamed = await parse(['--kubeconfig', '/kubeconfig', 'connect', '--allowed-ip', '10.5.0.1/32']);
    assert.deepEqual(unnamed.args, [undefined]);
    // `kgctl connect --allowed-ips $SERVICECIDR` (docs/kgctl.md)
    const cidrs = await parse(['connect', '--allowed-ips', '10.43.0.0/16']);
    assert.deepEqual((cidrs.opts['allowedIps'] as unknown[]).map(String), ['10.43.0.0/16']);
    // Connect's own flags follow it, as in Kilo (they are local flags there).
    assert.match(await failure(['--allowed-ip', '10.5.0.1/32', 'connect']), /unknown option '--allowed-ip'/);
  });

  test('an unknown flag is an error naming it, wherever it is', async () => {
    assert.match(await failure(['--bogus', 'plan', 'a']), /unknown option '--bogus'/);
    assert.match(await failure(['showconf', '--bogus', 'node', 'a']), /unknown option '--bogus'/);
    assert.match(await failure(['showconf', 'node', 'a', '--bogus']), /unknown option '--bogus'/);
    // kilo-ts's own flags follow the command.
    assert.match(await failure(['--cluster', 'x.yaml', 'plan', 'a']), /unknown option '--cluster'/);
    // Kilo has one backend.
    assert.match(await failure(['--backend', 'etcd', 'graph']), /'etcd' is invalid.*kubernetes/);
  });
});
