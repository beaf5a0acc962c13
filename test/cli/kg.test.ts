/**
 * `kg` as a new operator meets it: the help shows the agent's flags (Kilo's `kg` is the agent), a
 * word that is no command is called that, and `kg apply` on a machine without a default route says
 * what to do in one line, after checking the node it was asked for.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createNamespace, skipNoNetns, type TestNamespace } from '../helpers/netns.js';
import { ensureBuilt, example, root, type Run } from './built.js';
import { nodeCommand } from '../../scripts/node-flags.mjs';

ensureBuilt();
const kgBin = join(root, 'bin', 'kg');
// kg as the image runs it: its #! line's environment and node flags (scripts/node-flags.mjs).
const [kgFile, ...kgArgs] = nodeCommand(kgBin);

function kg(...args: string[]): Run {
  const r = spawnSync(kgFile, [...kgArgs, ...args], { cwd: root, encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function userError(r: Run, message: RegExp): void {
  assert.equal(r.status, 1, `exit code (stderr: ${r.stderr})`);
  assert.equal(r.stdout, '');
  assert.equal(r.stderr.trimEnd().split('\n').length, 1, `one line: ${JSON.stringify(r.stderr)}`);
  assert.doesNotMatch(r.stderr, /^\s+at /m, 'no stack trace');
  assert.match(r.stderr, message);
}

describe('kg', () => {
  test('--help lists the commands and the agent flags', () => {
    const r = kg('--help');
    assert.equal(r.status, 0, r.stderr);
    for (const command of ['run', 'apply', 'webhook', 'multicluster', 'lab'])
      assert.match(r.stdout, new RegExp(`^  ${command} `, 'm'));
    for (const flag of ['--hostname <name>', '--mesh-granularity <granularity>', '--kubeconfig <path>', '--mtu <mtu>'])
      assert.ok(r.stdout.includes(`\n  ${flag}`), `kg --help shows ${flag}`);
  });

  test('a word that is no command is called an unknown command, not an argument of run', () => {
    userError(
      kg('frobnicate'),
      /^kg: unknown command "frobnicate": kg's commands are run, apply, webhook, multicluster, lab/,
    );
    userError(kg('--hostname', 'n1', 'frobnicate'), /^kg: unknown command "frobnicate"/);
    // A command after agent flags is a command misplaced, not an unknown one.
    userError(kg('--hostname', 'n1', 'lab', 'show'), /^kg: "lab" after agent flags: .*put them after it: kg lab/);
  });

  test("the command-line library's errors start with kg:, in subcommands too", () => {
    userError(kg('--nosuch'), /^kg: unknown option '--nosuch'$/m);
    userError(kg('lab', 'show', '--log-level', 'loud'), /^kg: option '--log-level <level>' argument 'loud' is invalid/);
    userError(kg('lab', 'frobnicate'), /^kg: unknown command 'frobnicate'$/m);
  });

  test("--log-level before a command reaches the command (the lab's debug advice works both ways)", () => {
    const dir = join(tmpdir(), `kg-no-lab-${process.pid}`);
    for (const args of [
      ['--log-level', 'debug', 'lab', 'show', '--state-dir', dir],
      ['--log-level=debug', 'lab', 'show', '--state-dir', dir],
      ['lab', 'show', '--log-level', 'debug', '--state-dir', dir],
      ['lab', '--log-level', 'debug', 'show', '--state-dir', dir],
    ])
      userError(kg(...args), new RegExp(`^kg: no lab in ${dir} `));
  });

  test("kg lab exec NODE --state-dir D -- CMD: the state dir is kg's, not part of the command", () => {
    const dir = join(tmpdir(), `kg-no-lab-${process.pid}`);
    // No lab there: the message names the directory given after NODE, not the default one.
    for (const args of [
      ['lab', 'exec', 'n1', '--state-dir', dir, '--', 'true'],
      ['lab', 'exec', 'n1', `--state-dir=${dir}`, '--', 'true'],
      ['lab', 'exec', '--state-dir', dir, 'n1', '--', 'true'],
    ])
      userError(kg(...args), new RegExp(`^kg: no lab in ${dir} `));
    userError(
      kg('lab', 'exec', 'n1', '--verbose', '--', 'true'),
      /^kg: kg lab exec: "--verbose" before "--": only --state-dir goes there/,
    );
  });

  test("the agent refuses kgctl's --now (it judges readiness by its clock); kg apply takes it", () => {
    const r = kg('--now', '5');
    assert.equal(r.status, 1);
    assert.match(r.stderr, /unknown option '--now'/);
    assert.match(kg('apply', '--help').stdout, /--now <seconds>/);
  });
});

describe('kg as the image installs it (dist without the lab)', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'kg-image-layout-'));
    // Built as the Dockerfile builds it. Copies, not links: a module's imports resolve from its real path.
    const built = spawnSync(
      process.execPath,
      [join(root, 'scripts', 'build.mjs'), '--without-lab', '--outdir', join(dir, 'dist')],
      {
        encoding: 'utf8',
      },
    );
    assert.equal(built.status, 0, built.stderr);
    cpSync(join(root, 'bin'), join(dir, 'bin'), { recursive: true });
    copyFileSync(join(root, 'package.json'), join(dir, 'package.json'));
    symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const kgThere = (...args: string[]): Run => {
    const [file, ...argv] = nodeCommand(join(dir, 'bin', 'kg'));
    const r = spawnSync(file, [...argv, ...args], {
      cwd: dir,
      encoding: 'utf8',
    });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  };

  test('kg lab says the lab is not part of it and where to run it', () => {
    userError(kgThere('lab', 'up'), /^kg: the lab is not part of this installation .*checkout of kilo-ts/);
  });

  test('the agent and its other commands do not need the lab', () => {
    const r = kgThere('--help');
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^ {2}webhook /m);
    userError(
      kgThere('apply', '--cluster', example, '--key-file', join(dir, 'key'), '--hostname', 'nope'),
      /^kg: .*"nope"/,
    );
  });
});

describe('kg apply on a machine without a default route', { skip: skipNoNetns }, () => {
  let ns: TestNamespace;
  let dir: string;
  before(() => {
    ns = createNamespace('kt-nodef');
    dir = mkdtempSync(join(tmpdir(), 'kg-apply-'));
  });
  after(() => {
    ns?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });
  const apply = (...args: string[]): Run => {
    const r = spawnSync(
      'ip',
      [
        'netns',
        'exec',
        ns.name,
        kgFile,
        ...kgArgs,
        'apply',
        '--cluster',
        example,
        '--key-file',
        join(dir, 'key'),
        ...args,
      ],
      { cwd: root, encoding: 'utf8' },
    );
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  };

  // wireguard-go's socket and log are in the host's /var/run/wireguard (ip netns exec shares it).
  const iface = `ktnd${process.pid % 100000}`;
  const nothingLeft = () => {
    assert.equal(ns.sh('ip -o link show | wc -l').trim(), '1', 'nothing was created: only lo');
    for (const ext of ['sock', 'log']) assert.ok(!existsSync(`/var/run/wireguard/${iface}.${ext}`), ext);
  };

  test('an unknown node is named first', () => {
    userError(apply('--hostname', 'nope', '--interface', iface), /^kg: .*"nope"/);
    nothingLeft();
  });

  test('--mtu auto says there is no default route and what to do, in one line', () => {
    // The node is in the snapshot: its interface is created while the plan is made, and removed.
    userError(
      apply('--hostname', 'gcp-use-2', '--interface', iface),
      /^kg: --mtu auto: there is no default route .*give --mtu a number$/m,
    );
    nothingLeft();
  });
});
