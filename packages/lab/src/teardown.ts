import { existsSync, readdirSync, rmSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';
import { killNamespaceProcesses, stopProcess } from './processes.js';
import { run } from './sh.js';
import { StateDir, stateFile } from './state.js';

/**
 * Removes exactly what a lab recorded, newest first: its processes (by recorded PID and start
 * time), whatever else runs inside its namespaces (the agents' wireguard-go, probes), the
 * namespaces (their veths and bridges go with them), the directories it created. The mounts
 * over /var/run/wireguard lived in the private mount namespaces of those processes and are gone
 * with them. Safe to run twice, and after `up` crashed half-way.
 */
export async function teardown(dir: string, log: (line: string) => void = () => {}): Promise<void> {
  // The other clusters of a multi-cluster lab first: they hang on cluster 1's internet.
  for (const sub of existsSync(dir) ? readdirSync(dir).filter((f) => /^cluster-\d+$/.test(f)) : []) {
    if (existsSync(stateFile(join(dir, sub)))) await teardown(join(dir, sub), (line) => log(`${sub}: ${line}`));
  }
  if (!existsSync(stateFile(dir))) {
    log(`no lab in ${dir}: nothing to do`);
    return;
  }
  const state = StateDir.load(dir);
  const made = [...state.state.made].reverse();
  // Agents first (SIGKILL: their clean-up would only touch namespaces about to go), then the rest.
  const processes = made.filter((m) => m.kind === 'process');
  await Promise.all(processes.map((p) => stopProcess(p, p.what.startsWith('kg ') ? 'SIGKILL' : 'SIGTERM', 3000)));
  const namespaces = made.filter((m) => m.kind === 'netns').map((m) => m.name);
  await Promise.all(namespaces.map((ns) => killNamespaceProcesses(ns)));
  for (const ns of namespaces) run(['ip', 'netns', 'del', ns], { allowFail: true });
  log(`stopped ${processes.length} processes, removed ${namespaces.length} namespaces`);
  const dirs = made.filter((m) => m.kind === 'dir').map((m) => m.path);
  for (const d of dirs) {
    if (d === dir) continue;
    // A shared directory we created (/var/run/wireguard) goes only if nothing else uses it.
    if (existsSync(d) && readdirSync(d).length === 0) rmdirSync(d);
  }
  if (dirs.includes(dir)) rmSync(dir, { recursive: true, force: true });
  else for (const f of readdirSync(dir)) rmSync(`${dir}/${f}`, { recursive: true, force: true });
}
