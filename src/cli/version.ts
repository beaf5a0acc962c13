import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CommanderError, Option, type Command } from 'commander';

/** The package root: this file is dist/cli/version.js when built, src/cli/version.ts under tsx. */
const root = join(import.meta.dirname, '..', '..');

/**
 * Written by the image build (the Dockerfile's GIT_COMMIT argument): an image has no .git to ask.
 * Relative to the package root.
 */
export const buildInfoFile = join('dist', 'build-info.json');

export interface BuildInfo {
  version: string;
  /** The git commit the build came from, or 'unknown'. */
  commit: string;
}

function readCommit(): string {
  try {
    const info = JSON.parse(readFileSync(join(root, buildInfoFile), 'utf8')) as { commit?: unknown };
    if (typeof info.commit === 'string' && info.commit !== '') return info.commit;
  } catch {
    // No build-info.json: a checkout, asked below.
  }
  // Only our own checkout: under another project's node_modules, git would name that project's commit.
  if (!existsSync(join(root, '.git'))) return 'unknown';
  // Loaded here, not at start: node:child_process costs every kgctl (docs/performance.md#lazy-loading).
  const { spawnSync } = process.getBuiltinModule('node:child_process');
  const r = spawnSync('git', ['-C', root, 'rev-parse', 'HEAD'], { encoding: 'utf8', timeout: 5000 });
  const commit = r.status === 0 ? r.stdout.trim() : '';
  return /^[0-9a-f]{40,64}$/.test(commit) ? commit : 'unknown';
}

/** Read when asked (`--version`), not at every start: the agent need not spawn git to run. */
export function buildInfo(): BuildInfo {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
  return { version: pkg.version, commit: readCommit() };
}

/** `NAME VERSION (commit COMMIT)`, one line. */
export function versionLine(name: string, info: BuildInfo = buildInfo()): string {
  return `${name} ${info.version} (commit ${info.commit})`;
}

/**
 * `-V, --version` on a program: prints the version line and exits 0, as commander's own
 * `.version()` does, but computed only when the flag is given.
 */
export function withVersion(program: Command): Command {
  program.addOption(new Option('-V, --version', 'print the version and the git commit, then exit'));
  program.on('option:version', () => {
    const line = versionLine(program.name());
    process.stdout.write(`${line}\n`);
    // runProgram's exitOverride turns this into exit code 0, as commander's own --version does.
    throw new CommanderError(0, 'commander.version', line);
  });
  return program;
}
