/**
 * The built `kg` agent in a network namespace of its own, with wireguard-go, against the test API
 * server in this process (listening on the host end of a veth pair, 10.251.N.1; kg at 10.251.N.2).
 * Everything is removed after the test whatever its outcome: the kg processes it started and every
 * process left in its namespace (by PID: the namespace is the test's own), the veth pair, the
 * namespace and the temporary directory.
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { nodeCommand } from '../../scripts/node-flags.mjs';
import { ensureBuilt, root } from '../cli/built.js';
import { TestApiServer } from '../fixtures/apiserver.js';
import { createNamespace, type TestNamespace } from '../helpers/netns.js';
import { childrenOf, commandOf, namespacePids } from './dataplane-lab.js';

export interface KgRun {
  child: ChildProcess;
  pid: number;
  /** Its standard error (the log), line by line, as it comes. */
  log: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Whether a PID runs wireguard-go (a zombie, or a PID gone, does not: its command line is empty). */
export const isWireGuardGo = (pid: number) => /wireguard-go/.test(commandOf(pid));

export interface AgentNamespace {
  ns: TestNamespace;
  api: TestApiServer;
  /** kg's address: its internal IP, endpoint and --listen host. */
  nsIP: string;
  /** Starts `kg` as node `a` (userspace WireGuard, no CNI) with these flags added. */
  startKg(flags: readonly string[]): KgRun;
  /** /health's status code, 0 when kg does not answer. */
  health(): Promise<number>;
  /** The wireguard-go processes kg started (its children): found by PID, not by name. */
  wireGuardGoOf(kg: KgRun): number[];
  /** Every wireguard-go in the namespace, whoever's child it is now (an orphan's parent is init). */
  wireGuardGoInNamespace(): number[];
  /** Kills (SIGKILL, by PID) every process in the namespace: what a failed step left behind. */
  killLeftovers(): void;
}

/** A namespace joined to this process by a veth pair, and the test API server on the host's end. */
export async function agentNamespace(t: TestContext, prefix: string): Promise<AgentNamespace> {
  ensureBuilt();
  const n = 1 + (process.pid % 250);
  const hostIf = `kt-sd${n}`;
  const hostIP = `10.251.${n}.1`;
  const nsIP = `10.251.${n}.2`;
  const runs: KgRun[] = [];
  let ns: TestNamespace | null = null;
  let api: TestApiServer | null = null;
  const dir = mkdtempSync(join(tmpdir(), `${prefix}-`));
  const killLeftovers = () => {
    if (!ns) return;
    for (const pid of namespacePids(ns.name)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone already.
      }
    }
  };
  t.after(async () => {
    for (const r of runs) if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGKILL');
    await Promise.all(runs.map((r) => r.exited));
    killLeftovers();
    spawnSync('ip', ['link', 'del', hostIf]);
    ns?.destroy();
    await api?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const sh = (cmd: string) => {
    const r = spawnSync('sh', ['-c', cmd], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${cmd}: ${r.stderr}`);
  };
  ns = createNamespace(prefix);
  const name = ns.name;
  spawnSync('ip', ['link', 'del', hostIf]);
  sh(`ip link add ${hostIf} type veth peer name eth0 netns ${name}`);
  sh(`ip addr add ${hostIP}/30 dev ${hostIf} && ip link set ${hostIf} up`);
  sh(
    `ip -n ${name} addr add ${nsIP}/30 dev eth0 && ip -n ${name} link set eth0 up && ip -n ${name} route add default via ${hostIP}`,
  );
  api = await TestApiServer.start({ host: hostIP, bookmarkIntervalMs: 1000 });
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, api.kubeconfigYaml());
  const inNamespace = ns;

  const startKg = (flags: readonly string[]): KgRun => {
    // Through the namespace's own /var/run/wireguard, exec'd all the way down: the PID is kg's.
    const child = inNamespace.exec.start([
      ...nodeCommand(join(root, 'bin', 'kg')),
      '--hostname',
      'a',
      '--kubeconfig',
      kubeconfig,
      '--wireguard',
      'userspace',
      '--key-file',
      join(dir, 'key'),
      '--listen',
      `${nsIP}:1107`,
      '--mtu',
      '1420',
      '--cni=false',
      ...flags,
    ]);
    child.stdout?.resume();
    const log: string[] = [];
    child.stderr!.on('data', (d: Buffer) => log.push(...d.toString().split('\n').filter(Boolean)));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal })),
    );
    const run = { child, pid: child.pid!, log, exited };
    runs.push(run);
    return run;
  };

  return {
    ns: inNamespace,
    api,
    nsIP,
    startKg,
    health: async () =>
      (await fetch(`http://${nsIP}:1107/health`, { signal: AbortSignal.timeout(5_000) }).catch(() => null))?.status ??
      0,
    wireGuardGoOf: (kg) => childrenOf(kg.pid).filter(isWireGuardGo),
    wireGuardGoInNamespace: () => namespacePids(name).filter(isWireGuardGo),
    killLeftovers,
  };
}
