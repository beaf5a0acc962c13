/**
 * Runs the built CLI (bin/kgctl → dist/) as a user would: a separate process, real argv,
 * exit code, stdout and stderr.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { Plan } from '../../src/mesh/types.js';

export const root = join(import.meta.dirname, '..', '..');
export const example = join(root, 'examples', 'cross.yaml');
const entry = join(root, 'dist', 'cli', 'kgctl.js');

function newestSource(dir: string): number {
  let newest = 0;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const s = statSync(p);
    newest = Math.max(newest, s.isDirectory() ? newestSource(p) : name.endsWith('.ts') ? s.mtimeMs : 0);
  }
  return newest;
}

/** Builds dist/ (scripts/build.mjs) unless it is newer than every source file, so a test file also runs alone. */
export function ensureBuilt(): void {
  if (existsSync(entry) && statSync(entry).mtimeMs >= newestSource(join(root, 'src'))) return;
  const r = spawnSync(process.execPath, [join(root, 'scripts', 'build.mjs')], { cwd: root, encoding: 'utf8' });
  if (r.status !== 0 || !existsSync(entry)) throw new Error(`build produced no ${entry}:\n${r.stdout}${r.stderr}`);
}

export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function kgctl(...args: string[]): Run {
  const r = spawnSync(process.execPath, [join(root, 'bin', 'kgctl'), ...args], { cwd: root, encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** `kgctl plan ARGS` that must succeed: its JSON plan and its warnings. */
export function kgctlPlan(...args: string[]): { plan: Plan; stderr: string } {
  const r = kgctl('plan', ...args);
  assert.equal(r.status, 0, r.stderr);
  return { plan: JSON.parse(r.stdout) as Plan, stderr: r.stderr };
}
