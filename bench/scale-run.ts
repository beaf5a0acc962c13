/**
 * `kg run` at scale, part of `npm run bench:scale`: one agent in a network namespace of its own,
 * with real wireguard-go, against the lab's API server (`kg lab apiserver`, started in the same
 * namespace) holding a generated cross cluster of N nodes, while a simulator patches every other
 * node's last-seen (with a path-health beside it, as a kilo-ts agent's check-in carries) once per
 * resync period, from its creation on, spread evenly over it (Kilo's heartbeat). Measures:
 * - start-up: process start to its list done ("cluster synced"), and that to the first apply
 *   done (the first "dataplane updated");
 * - steady state under heartbeats: the agent's CPU (% of one core, from /proc; its descendants',
 *   the command helper's, apart) over a window that begins after its first resync, its RSS over the
 *   window (median and highest of a reading a second) and its peak RSS since start;
 * - join: a new Node object created → the pass that put its peer and routes on the machine done
 *   ("dataplane updated", with the peer then checked in wireguard-go and the route in the kernel).
 * The agent runs as the image runs it (bin/kg with its V8 flags). Everything runs inside the
 * namespace and is killed with it.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdirSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { LabApiClient } from '../packages/lab/src/client.js';
import { inNodeNs } from '../packages/lab/src/sh.js';
import { formatPathHealth } from '../src/agent/health-summary.js';
import { Annotation } from '../src/model/annotations.js';
import type { KubeObject } from '../src/model/parse.js';
import { parseUapiGet, uapiRequest } from '../src/dataplane/wireguard/uapi.js';
import { loadOrCreateKey, publicKeyOf } from '../src/wireguard/keys.js';
import { generateCluster, publicKey } from './generate.js';
import { nodeCommand } from '../scripts/node-flags.mjs';

const root = join(import.meta.dirname, '..');
// KILO_BENCH_KG: another kg launcher (e.g. an old build's bin/kg beside its dist/), for A/B runs.
const kg = process.env['KILO_BENCH_KG'] ?? join(root, 'bin', 'kg');
const iface = 'kilo0';
const resyncPeriodMs = 30_000;
const clockTicks = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

export interface RunFigures {
  nodes: number;
  toSyncedS: number;
  syncedToAppliedS: number;
  cpuPercent: number;
  /** The part of cpuPercent spent on the main thread (the rest: V8's GC and compiler threads, libuv's pool). */
  mainThreadCpuPercent: number;
  /** The CPU of the agent's descendants (its command helper and what that runs): not in cpuPercent. */
  childrenCpuPercent: number;
  /** When the window began, s after the agent's start. */
  windowStartS: number;
  windowS: number;
  heartbeatsPerS: number;
  /**
   * From the window on, the most a simulated heartbeat was sent after it was due: the simulator
   * falling behind (a loaded machine) ages every last-seen by as much, and past 30 s nodes go stale.
   */
  heartbeatsLateS: number;
  /** RSS during the window: median and highest of one reading a second. */
  rssMiB: number;
  rssMaxMiB: number;
  /** The highest RSS since start (VmHWM): the start-up's first apply included. */
  peakRssMiB: number;
  joinP50Ms: number;
  joinMaxMs: number;
  /** Why the joins stopped short (a join's pass did not come within 30 s), or null. */
  joinFailure: string | null;
  joins: number;
  /**
   * The joins' own passes, median ms per phase ("parse/plan/publish/apply"), from their debug line
   * (KILO_BENCH_AGENT_LOG_LEVEL=debug); null at other levels.
   */
  joinPhasesMs: string | null;
  /** Reconcile passes the agent made during the CPU window (heartbeats alone should make none). */
  passesInWindow: number;
  /** The longest line the agent logged, in characters. */
  longestLogLine: number;
}

interface LogLine {
  time: number;
  msg: string;
  [field: string]: unknown;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The agent's log, line by line as JSON, with a way to wait for a line. */
class AgentLog {
  readonly lines: LogLine[] = [];
  longest = 0;
  private waiters: (() => void)[] = [];

  constructor(stream: NodeJS.ReadableStream, copyTo?: string) {
    createInterface({ input: stream }).on('line', (text) => {
      if (copyTo) appendFileSync(copyTo, `${text}\n`);
      this.longest = Math.max(this.longest, text.length);
      try {
        const line = JSON.parse(text) as { msg: string; time: number | string };
        this.lines.push({ ...line, time: typeof line.time === 'number' ? line.time : Date.parse(line.time) });
      } catch {
        this.lines.push({ time: Date.now(), msg: text });
      }
      for (const w of this.waiters.splice(0)) w();
    });
  }

  /** The first line from index `from` on that `match` accepts. */
  async waitFor(match: (l: LogLine) => boolean, from: number, timeoutMs: number): Promise<LogLine> {
    const deadline = Date.now() + timeoutMs;
    for (let i = from; ;) {
      for (; i < this.lines.length; i++) if (match(this.lines[i]!)) return this.lines[i]!;
      if (Date.now() > deadline) {
        const tail = this.lines.slice(-3).map((l) => l.msg);
        throw new Error(`agent: no matching log line within ${timeoutMs} ms (last: ${tail.join(' | ')})`);
      }
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 200);
      });
    }
  }
}

/** The agent's kilo_reconciles_total, from its metrics endpoint inside the namespace. */
function reconciles(ns: string): number {
  const get = "fetch('http://127.0.0.1:1107/metrics').then((r) => r.text()).then((t) => process.stdout.write(t))";
  const text = spawnSync('ip', ['netns', 'exec', ns, process.execPath, '-e', get], { encoding: 'utf8' }).stdout;
  return Number(/^kilo_reconciles_total(?:\{[^}]*\})? (\d+)/m.exec(text)?.[1] ?? NaN);
}

/** The fields of a stat(5) text from field 3 on (the name in parentheses may hold spaces): field n is [n - 3]. */
function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** utime + stime of a process (all its threads), or of one of its threads, in seconds. */
function cpuSeconds(pid: number, thread?: number): number {
  const path = thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`;
  const fields = statFields(spawnSync('cat', [path], { encoding: 'utf8' }).stdout);
  // Fields 14 and 15 of stat(5).
  return (Number(fields[11]) + Number(fields[12])) / clockTicks;
}

/**
 * CPU seconds of the process's descendants (the command helper's shell and the ip, iptables-save
 * and wg it runs), each one's own and its reaped children's (fields 14-17 of stat(5)): a
 * difference of two readings counts what ran between them, a child that ended in between through
 * its parent. wireguard-go runs detached and is not among them.
 */
function descendantsCpuSeconds(pid: number): number {
  // utime + stime of each process, and cutime + cstime (fields 14-15, 16-17) of its reaped children.
  const stats = new Map<number, { ppid: number; own: number; reaped: number }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let f: string[];
    try {
      f = statFields(readFileSync(`/proc/${entry}/stat`, 'utf8'));
    } catch {
      continue; // ended since the listing
    }
    stats.set(Number(entry), {
      ppid: Number(f[1]),
      own: Number(f[11]) + Number(f[12]),
      reaped: Number(f[13]) + Number(f[14]),
    });
  }
  const tree = new Set([pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const [p, s] of stats)
      if (!tree.has(p) && tree.has(s.ppid)) {
        tree.add(p);
        grew = true;
      }
  }
  let ticks = 0;
  for (const p of tree) {
    const s = stats.get(p);
    if (s) ticks += p === pid ? s.reaped : s.own + s.reaped;
  }
  return ticks / clockTicks;
}

function statusMiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const status = spawnSync('cat', [`/proc/${pid}/status`], { encoding: 'utf8' }).stdout;
  const kb = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1];
  return Number(kb) / 1024;
}

/**
 * Creates objects `concurrency` at a time. A Node's last-seen is stamped as it is created, and
 * `created` hears of it once it exists: on a loaded machine creating 20,000 Nodes takes longer than
 * the 60 s a last-seen is good for, and a stamp from before the first would leave the early ones
 * stale when the agent lists them (its first apply then held a few thousand peers, and the passes
 * after it added the rest as their heartbeats came).
 */
async function createAll(
  api: LabApiClient,
  objects: KubeObject[],
  created: (o: KubeObject) => void,
  concurrency = 16,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < objects.length) {
      const o = objects[next++]!;
      const annotations = o.metadata?.annotations;
      if (o.kind === 'Node' && annotations?.[Annotation.lastSeen] !== undefined)
        annotations[Annotation.lastSeen] = String(Math.floor(Date.now() / 1000));
      await api.create(o.kind === 'Peer' ? 'peers' : 'nodes', o);
      created(o);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/**
 * A kilo-ts agent's path-health as its check-in carries it: its counts move as probing sweeps on
 * (health-summary.ts), so the value differs from the last one.
 */
function pathHealthOf(beat: number): string {
  const recent = 19_000 - (beat % 97);
  return formatPathHealth({
    pairs: { ok: 38 + (beat % 5), failing: 0, unknown: 0 },
    handshakes: { recent, stale: 19_000 - recent, never: 10 },
    failing: [],
    more: 0,
  });
}

/**
 * Patches each added node's last-seen (and path-health, as kilo-ts agents do) to now once per period from when it was added (Kilo's
 * heartbeat: a cluster's nodes spread evenly over the period once created at an even pace), until
 * stopped. Each beat is due a period after the node's last one was due, not after it was sent: a
 * simulator that falls behind on a loaded machine catches up rather than letting last-seen drift.
 * Resolves with the number of patches sent.
 */
function heartbeats(
  api: LabApiClient,
  periodMs: number,
): { add(name: string): void; sent(): number; lateMs(): number; stop(): Promise<number> } {
  // In due order: nodes are added in time order, and each beat is queued one period after the last.
  let queue: { name: string; due: number }[] = [];
  let head = 0;
  let sent = 0;
  let inFlight = 0;
  let late = 0;
  let failed: Error | null = null;
  const timer = setInterval(() => {
    const now = Date.now();
    if (head < queue.length) late = Math.max(late, now - queue[head]!.due);
    // A loaded machine falls behind; at most 64 in flight keeps the simulator from piling up.
    while (head < queue.length && queue[head]!.due <= now && inFlight < 64) {
      const beat = queue[head++]!;
      queue.push({ name: beat.name, due: beat.due + periodMs });
      sent++;
      inFlight++;
      const annotations = {
        [Annotation.lastSeen]: String(Math.floor(Date.now() / 1000)),
        [Annotation.pathHealth]: pathHealthOf(sent),
      };
      api
        .patch('nodes', beat.name, { metadata: { annotations } })
        .catch((e: unknown) => (failed ??= e as Error))
        .finally(() => inFlight--);
    }
    if (head > 100_000) {
      queue = queue.slice(head);
      head = 0;
    }
  }, 10);
  return {
    sent: () => sent,
    /** The most a beat was sent after it was due, since the last call (a last-seen that late is stale). */
    lateMs() {
      const most = late;
      late = 0;
      return most;
    },
    add(name) {
      queue.push({ name, due: Date.now() + periodMs });
    },
    async stop() {
      clearInterval(timer);
      while (inFlight > 0) await sleep(10);
      if (failed) throw failed;
      return sent;
    },
  };
}

/**
 * A new node in location 1 (not the agent's): its own key, endpoint, internal IP and pod CIDR.
 * Its name sorts after every other: WireGuard IPs go by segment order (as in Kilo), so a name
 * sorting first would renumber every peer and make the join a rewrite of the whole device.
 */
function joiningNode(j: number, lastSeen: number): { node: KubeObject; key: string; podCIDR: string } {
  const key = publicKey();
  const podCIDR = `10.200.${j}.0/24`;
  const node: KubeObject = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: `node-${90_000 + j}`,
      labels: { 'topology.kubernetes.io/region': 'region-1' },
      annotations: {
        [Annotation.key]: key,
        [Annotation.endpoint]: `100.127.0.${j + 1}:51820`,
        [Annotation.internalIP]: `172.16.31.${j + 1}/20`,
        [Annotation.lastSeen]: String(lastSeen),
        [Annotation.granularity]: 'cross',
      },
    },
    spec: { podCIDR },
  };
  return { node, key, podCIDR };
}

async function joined(ns: string, runDir: string, key: string, podCIDR: string): Promise<boolean> {
  const peers = parseUapiGet(await uapiRequest(join(runDir, `${iface}.sock`), iface, 'get=1\n\n')).state.peers;
  const route = spawnSync('ip', ['-n', ns, 'route', 'show', 'table', 'all', podCIDR], { encoding: 'utf8' }).stdout;
  return peers.some((p) => p.publicKey === key) && route.includes(iface);
}

/** SIGTERM first, so that the agent exits as it would (and writes its profile), then SIGKILL. */
async function stop(child: ChildProcess | null): Promise<void> {
  if (child?.pid === undefined || child.exitCode !== null) return;
  child.kill('SIGTERM');
  for (let i = 0; i < 50 && child.exitCode === null && child.signalCode === null; i++) await sleep(100);
  kill(child);
}

function kill(child: ChildProcess | null): void {
  if (child?.pid !== undefined && child.exitCode === null) child.kill('SIGKILL');
}

/** One size: namespace, API server, cluster, agent, heartbeats, joins; torn down whatever happens. */
export async function benchRunOnce(
  nodes: number,
  dir: string,
  o: { windowS: number; joins: number },
): Promise<RunFigures> {
  const ns = `kts-br-${process.pid}-${nodes}`;
  const runDir = join(dir, `run-${nodes}`);
  mkdirSync(runDir, { recursive: true, mode: 0o700 });
  const sock = join(runDir, 'api.sock');
  const kubeconfig = join(runDir, 'kubeconfig');
  const keyFile = join(runDir, 'key');
  let apiserver: ChildProcess | null = null;
  let agent: ChildProcess | null = null;
  let beating: ReturnType<typeof heartbeats> | null = null;
  spawnSync('ip', ['netns', 'add', ns]);
  try {
    // node-00000's private NIC, holding its internal IP (as in the kg apply bench).
    const setUp = 'ip link set lo up && ip link add priv0 type veth peer name priv1 && '.concat(
      'ip addr add 172.16.0.1/20 dev priv0 && ip link set priv0 up && ip link set priv1 up',
    );
    spawnSync('ip', ['netns', 'exec', ns, 'sh', '-c', setUp]);
    apiserver = spawn(
      'ip',
      ['netns', 'exec', ns, ...nodeCommand(kg), 'lab', 'apiserver', '--listen', '127.0.0.1:6443', '--socket', sock],
      { stdio: 'ignore' },
    );
    const api = new LabApiClient(sock);
    await api.waitReady(120_000);
    const now = Math.floor(Date.now() / 1000);
    const cluster = generateCluster(nodes, 20, 10, now);
    // The agent's own node already carries its key: an agent restarted on a node of the mesh.
    cluster[0]!.metadata!.annotations![Annotation.key] = publicKeyOf(loadOrCreateKey(keyFile));
    // Heartbeats from the start, as a live cluster's agents beat: the first apply at 20,000 nodes
    // on a loaded machine outlasts the 60 s a last-seen is good for, and nodes of a simulator
    // started after it dropped out (and back in) of the mesh. Each node beats a period after it
    // was created (the agent's own node is the agent's to publish).
    beating = heartbeats(api, resyncPeriodMs);
    const beats = beating;
    await createAll(api, cluster, (o) => {
      if (o.kind === 'Node' && o.metadata!.name !== 'node-00000') beats.add(o.metadata!.name!);
    });
    writeFileSync(
      kubeconfig,
      'apiVersion: v1\nkind: Config\nclusters: [{name: b, cluster: {server: "http://127.0.0.1:6443"}}]\n' +
        'users: [{name: b, user: {}}]\ncontexts: [{name: b, context: {cluster: b, user: b}}]\ncurrent-context: b\n',
    );
    const started = Date.now();
    // KILO_BENCH_AGENT_PROF: a directory for the agent's CPU profile (written when it is stopped).
    const prof = process.env['KILO_BENCH_AGENT_PROF'];
    // KILO_BENCH_AGENT_NODE_FLAGS: more flags for the agent's node, e.g. --heapsnapshot-signal=SIGUSR2.
    const flags = (process.env['KILO_BENCH_AGENT_NODE_FLAGS'] ?? '').split(' ').filter(Boolean);
    const profile = prof ? ['--cpu-prof', '--cpu-prof-dir', prof] : [];
    // Run through node itself, bin/kg's own environment and V8 flags (its #! line) go first, as the image has them.
    const node = flags.length + profile.length > 0 ? nodeCommand(kg, [...profile, ...flags, kg]) : [kg];
    const argv = inNodeNs(ns, runDir, [...node, '--hostname', 'node-00000'])
      .concat(['--kubeconfig', kubeconfig, '--mesh-granularity', 'cross', '--encapsulate=never'])
      .concat(['--clean-up=false', '--key-file', keyFile, '--interface', iface, '--mtu', '1420'])
      .concat(['--listen', '127.0.0.1:1107', '--resync-period', `${resyncPeriodMs / 1000}s`])
      // KILO_BENCH_AGENT_LOG_LEVEL: e.g. debug, for each pass's timings in KILO_BENCH_AGENT_LOG.
      .concat(['--log-level', process.env['KILO_BENCH_AGENT_LOG_LEVEL'] ?? 'info']);
    // KILO_BENCH_AGENT_STDOUT: a file for the agent's stdout (e.g. what --trace-gc prints).
    const stdout = process.env['KILO_BENCH_AGENT_STDOUT'];
    agent = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', stdout ? openSync(stdout, 'w') : 'ignore', 'pipe'] });
    const pid = agent.pid!;
    // KILO_BENCH_AGENT_LOG: a file to copy the agent's log to.
    const log = new AgentLog(agent.stderr!, process.env['KILO_BENCH_AGENT_LOG']);
    const synced = await log.waitFor((l) => l.msg === 'cluster synced', 0, 120_000);
    const applied = await log.waitFor((l) => l.msg === 'dataplane updated', 0, 120_000);

    // Settle under heartbeats before measuring: the agent's own annotations published and seen, and
    // its first resync done (the timer starts at "cluster synced"), since that first full read after
    // the first apply parses everything once and is not what each period costs. KILO_BENCH_RUN_SETTLE
    // (s after the first apply) measures from an earlier moment.
    const settleS = process.env['KILO_BENCH_RUN_SETTLE'];
    const settleUntil = settleS
      ? applied.time + Number(settleS) * 1000
      : Math.max(applied.time + 8000, synced.time + resyncPeriodMs + 8000);
    await sleep(Math.max(0, settleUntil - Date.now()));
    const passes0 = reconciles(ns);
    const sent0 = beating.sent();
    beating.lateMs();
    const cpu0 = cpuSeconds(pid);
    const main0 = cpuSeconds(pid, pid);
    const children0 = descendantsCpuSeconds(pid);
    const t0 = Date.now();
    // RSS once a second: a single reading lands anywhere between two collections.
    const rssSamples: number[] = [];
    while (Date.now() - t0 < o.windowS * 1000) {
      await sleep(Math.min(1000, o.windowS * 1000 - (Date.now() - t0)));
      rssSamples.push(statusMiB(pid, 'VmRSS'));
    }
    const cpu1 = cpuSeconds(pid);
    const main1 = cpuSeconds(pid, pid);
    const children1 = descendantsCpuSeconds(pid);
    const t1 = Date.now();
    const sent1 = beating.sent();
    const passes1 = reconciles(ns);
    rssSamples.sort((a, b) => a - b);

    // Joins under the same heartbeats, one at a time.
    const latencies: number[] = [];
    const phases: Record<string, number>[] = [];
    // A join that does not come is a figure too: the window's figures above are kept with it.
    let joinFailure: string | null = null;
    for (let j = 0; j < o.joins && joinFailure === null; j++) {
      const { node, key, podCIDR } = joiningNode(j, Math.floor(Date.now() / 1000));
      const from = log.lines.length;
      const createdAt = Date.now();
      await api.create('nodes', node);
      if (process.env['KILO_BENCH_AGENT_LOG'])
        appendFileSync(
          process.env['KILO_BENCH_AGENT_LOG'],
          `created node-${90_000 + j} at ${new Date(createdAt).toISOString()}\n`,
        );
      // The first pass after which its peer is in wireguard-go and its route in the kernel.
      let done: LogLine | null = null;
      for (let at = from; !done;) {
        const line = await log
          .waitFor((l) => l.msg === 'dataplane updated', at, 30_000)
          .catch((e: unknown) => void (joinFailure = `join ${j + 1}: ${(e as Error).message.slice(0, 60)}`));
        if (!line) break;
        at = log.lines.indexOf(line) + 1;
        if (await joined(ns, runDir, key, podCIDR)) done = line;
      }
      if (!done) break;
      latencies.push(done.time - createdAt);
      // The pass logs its timings right after its "dataplane updated".
      const pass = log.lines.slice(log.lines.indexOf(done)).find((l) => l.msg === 'reconcile pass');
      if (pass) phases.push(pass as unknown as Record<string, number>);
      await sleep(1000);
    }
    const lateS = beating.lateMs() / 1000;
    await beating.stop();
    beating = null;
    latencies.sort((a, b) => a - b);
    return {
      nodes,
      toSyncedS: (synced.time - started) / 1000,
      syncedToAppliedS: (applied.time - synced.time) / 1000,
      cpuPercent: ((cpu1 - cpu0) / ((t1 - t0) / 1000)) * 100,
      mainThreadCpuPercent: ((main1 - main0) / ((t1 - t0) / 1000)) * 100,
      childrenCpuPercent: ((children1 - children0) / ((t1 - t0) / 1000)) * 100,
      windowStartS: (t0 - started) / 1000,
      windowS: (t1 - t0) / 1000,
      heartbeatsPerS: (sent1 - sent0) / ((t1 - t0) / 1000),
      heartbeatsLateS: lateS,
      rssMiB: rssSamples[Math.floor(rssSamples.length / 2)] ?? NaN,
      rssMaxMiB: rssSamples.at(-1) ?? NaN,
      peakRssMiB: statusMiB(pid, 'VmHWM'),
      joinP50Ms: latencies[Math.floor(latencies.length / 2)] ?? NaN,
      joinMaxMs: latencies.at(-1) ?? NaN,
      joinFailure,
      joins: latencies.length,
      joinPhasesMs:
        phases.length === 0
          ? null
          : ['parseMs', 'planMs', 'publishMs', 'applyMs']
              .map((k) => phases.map((p) => p[k] ?? NaN).sort((a, b) => a - b)[Math.floor(phases.length / 2)])
              .join('/'),
      passesInWindow: passes1 - passes0,
      longestLogLine: log.longest,
    };
  } finally {
    await beating?.stop().catch(() => 0);
    await stop(agent);
    kill(apiserver);
    // wireguard-go runs detached in the namespace: everything in it is ours.
    const pids = spawnSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' }).stdout.split('\n');
    for (const p of pids.filter((x) => /^\d+$/.test(x))) spawnSync('kill', ['-9', p]);
    spawnSync('ip', ['netns', 'del', ns]);
  }
}
