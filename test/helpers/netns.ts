import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { netnsExec, type Exec } from '../../src/dataplane/exec.js';
import { skipUnless } from './requirements.js';

/** Whether this machine lets us make network namespaces (root, iproute2); tests skip otherwise. */
export function canCreateNamespaces(): boolean {
  if (process.getuid?.() !== 0) return false;
  const name = `kt-probe-${process.pid}`;
  const r = spawnSync('ip', ['netns', 'add', name]);
  if (r.status !== 0) return false;
  spawnSync('ip', ['netns', 'del', name]);
  return true;
}

export const skipNoNetns = skipUnless(canCreateNamespaces(), 'needs root and network namespaces (ip netns add failed)');

export interface TestNamespace {
  name: string;
  exec: Exec;
  /** Per-namespace directory bound over /var/run/wireguard. */
  runDir: string;
  /** Runs a command in the namespace synchronously, returns stdout; throws on failure. */
  sh(cmd: string): string;
  destroy(): void;
}

let counter = 0;

/** A fresh namespace with loopback up; destroy() removes it and its run directory. */
export function createNamespace(prefix = 'kt'): TestNamespace {
  const name = `${prefix}-${process.pid}-${counter++}`;
  execFileSync('ip', ['netns', 'add', name]);
  const base = mkdtempSync(join(tmpdir(), `${name}-`));
  const runDir = join(base, 'wireguard');
  mkdirSync(runDir, { recursive: true });
  execFileSync('ip', ['-n', name, 'link', 'set', 'lo', 'up']);
  return {
    name,
    runDir,
    exec: netnsExec(name, runDir),
    sh: (cmd: string) =>
      execFileSync(
        'ip',
        [
          'netns',
          'exec',
          name,
          'sh',
          '-c',
          `mkdir -p /var/run/wireguard && mount --bind "$0" /var/run/wireguard && ${cmd}`,
          runDir,
        ],
        {
          encoding: 'utf8',
        },
      ),
    destroy() {
      spawnSync('ip', ['netns', 'del', name]);
      rmSync(base, { recursive: true, force: true });
    },
  };
}
