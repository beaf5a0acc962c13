/**
 * `npm run bench:scale`: whole-process figures of what a user waits for at 1,000 to 10,000 nodes
 * (cross granularity, 20 locations, 10 Peers, a JSON snapshot as `bench/generate.ts` makes it):
 * `kgctl plan`, `kgctl graph`, and `kg apply` in a fresh network namespace (first, unchanged, one
 * node changed; with `location`, kg apply's default, and `cross`), next to the same writes made by
 * the plain tools (wireguard-go, `wg setconf`, one `ip -batch`, `iptables-restore`) in a fresh
 * namespace, and by the same tools run from a Node process that first reads and parses the snapshot
 * (the floor of any Node kg apply on the machine: Node's start and its fresh memory); and `kg run` against the lab's API server under heartbeats (bench/scale-run.ts), with
 * what it keeps per node (bench/scale-memory.ts).
 * Time is wall clock of the whole process (start-up included), min and median of
 * several runs; memory is the peak RSS (`/usr/bin/time`'s maximum resident set size). Prints
 * figures, asserts nothing; the machine's load is printed with them, since it moves them.
 * Environment: KILO_BENCH_PARTS (kgctl,apply,run), KILO_BENCH_SIZES, KILO_BENCH_KGCTL_SIZES, KILO_BENCH_RUNS,
 * KILO_BENCH_GRANULARITY (location,cross), KILO_BENCH_RUN_WINDOW (s), KILO_BENCH_RUN_SETTLE (s after the first
 * apply; default: past the first resync), KILO_BENCH_RUN_JOINS, and for
 * looking into the agent KILO_BENCH_AGENT_LOG (file), KILO_BENCH_AGENT_LOG_LEVEL, KILO_BENCH_AGENT_PROF (dir),
 * KILO_BENCH_AGENT_NODE_FLAGS (more node flags for the agent), KILO_BENCH_AGENT_STDOUT
 * (file), KILO_BENCH_KG (another kg, for A/B).
 */
import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { dualStack, generateCluster, publicKey } from './generate.js';
import type { KubeObject } from '../src/model/parse.js';
import { benchRunOnce } from './scale-run.js';
import { keptBytesPerNode } from './scale-memory.js';
import { machineFigures } from './machine.js';
import { kiloPlanBinary, kiloPlanInput } from './kilo-reference.js';
import { baselineScript, commandOutput, plainToolsInput, readDumps } from './plain-tools.js';

const root = join(import.meta.dirname, '..');
const kgctl = join(root, 'bin', 'kgctl');
// KILO_BENCH_KG: another build's kg for kg apply's rows too (A/B), as for kg run's (scale-run.ts).
const kg = process.env['KILO_BENCH_KG'] ?? join(root, 'bin', 'kg');
const dir = mkdtempSync(join(tmpdir(), 'kts-bench-scale-'));
const runs = Number(process.env['KILO_BENCH_RUNS'] ?? 3);
const sizes = (process.env['KILO_BENCH_SIZES'] ?? '1000,2000,5000,10000').split(',').map(Number);
// At 20,000 nodes on two loaded cores a first write (kg apply's or the plain tools') took 45-120 s.
const timeoutMs = 300_000;
/** kgctl's sizes: it reads a snapshot, so it goes further than the agent's benchmarks. */
const kgctlSizes = (process.env['KILO_BENCH_KGCTL_SIZES'] ?? '1000,2000,5000,10000,20000').split(',').map(Number);
/** kg apply's and kg run's sizes: up to 5,000 unless KILO_BENCH_SIZES names them (20,000: issue 37's agent figures). */
const agentSizes = process.env['KILO_BENCH_SIZES'] ? sizes : sizes.filter((s) => s <= 5000);
/** KILO_BENCH_KILO_SIZES: the sizes of the side-by-side rows (issue 37: 5,000 and 20,000). */
const kiloSizes = (process.env['KILO_BENCH_KILO_SIZES'] ?? '5000,20000').split(',').map(Number);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

interface Run {
  seconds: number;
  /** User and system CPU: less moved by the others' load than the wall clock. */
  cpuSeconds: number;
  rssMiB: number;
  ok: boolean;
  stderr: string;
}

/** One whole process under /usr/bin/time: wall seconds, CPU seconds and peak RSS; `stdin`: a file to read. */
function timed(argv: string[], stdin?: string): Run {
  const out = join(dir, 'time.txt');
  const input = stdin === undefined ? 'pipe' : openSync(stdin, 'r');
  const r = spawnSync('/usr/bin/time', ['-f', '%e %M %U %S', '-o', out, ...argv], {
    encoding: 'utf8',
    maxBuffer: 1 << 30,
    timeout: timeoutMs,
    stdio: [input, 'pipe', 'pipe'],
  });
  if (typeof input === 'number') closeSync(input);
  let seconds = NaN;
  let cpuSeconds = NaN;
  let rssMiB = NaN;
  try {
    const [s, kb, user, sys] = readFileSync(out, 'utf8').trim().split('\n').at(-1)!.split(' ');
    seconds = Number(s);
    cpuSeconds = Number(user) + Number(sys);
    rssMiB = Number(kb) / 1024;
  } catch {
    // killed by the timeout: no figures
  }
  return { seconds, cpuSeconds, rssMiB, ok: r.status === 0, stderr: r.stderr ?? '' };
}

function stats(rs: Run[]): string {
  if (rs.some((r) => !r.ok)) {
    const first = rs.find((r) => !r.ok)!;
    return `failed or > ${timeoutMs / 1000} s (${first.stderr.trim().split('\n').at(-1)?.slice(0, 240) ?? ''}) | – | –`;
  }
  const s = rs.map((r) => r.seconds).sort((a, b) => a - b);
  const median = s[Math.floor(s.length / 2)]!;
  const rss = Math.max(...rs.map((r) => r.rssMiB));
  return `${s[0]!.toFixed(2)} | ${median.toFixed(2)} | ${rss.toFixed(0)}`;
}

function load(): string {
  return loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
}

function snapshot(nodes: number, lastSeen?: number): string {
  const file = join(dir, `cluster-${nodes}${lastSeen ? `-${lastSeen}` : ''}.json`);
  writeFileSync(
    file,
    JSON.stringify({ apiVersion: 'v1', kind: 'List', items: generateCluster(nodes, 20, 10, lastSeen) }),
  );
  return file;
}

/**
 * The steps that were quadratic, loaded: every node with an allowed-location IP (some claimed
 * twice, so the filter drops them), a Peer per ten nodes, every tenth naming the allowed IP of the
 * one before (de-duplication). Conflicts go to stderr, which the benchmark does not print.
 */
function stressSnapshot(nodes: number): string {
  const file = join(dir, `stress-${nodes}.json`);
  const items = generateCluster(nodes, 20, 0);
  items.forEach((item, i) => {
    const ip = i % 50 === 49 ? i - 1 : i;
    item.metadata!.annotations!['kilo.squat.ai/allowed-location-ips'] =
      `192.${168 + (ip >> 16)}.${(ip >> 8) & 0xff}.${ip & 0xff}/32`;
  });
  for (let p = 0; p < nodes / 10; p++) {
    const ip = p % 10 === 9 ? p - 1 : p;
    items.push({
      apiVersion: 'kilo.squat.ai/v1alpha1',
      kind: 'Peer',
      metadata: { name: `peer-${p}` },
      spec: { allowedIPs: [`10.${5 + (ip >> 16)}.${(ip >> 8) & 0xff}.${ip & 0xff}/32`], publicKey: publicKey() },
    });
  }
  writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
  return file;
}

/** The same cluster with one node's pod CIDR moved: a one-node change for `kg apply`. */
function withOneNodeChanged(file: string): string {
  const list = JSON.parse(readFileSync(file, 'utf8')) as { items: { spec?: Record<string, unknown> }[] };
  list.items[1]!.spec = { podCIDR: '10.250.0.0/24' };
  const changed = file.replace(/\.json$/, '-changed.json');
  writeFileSync(changed, JSON.stringify(list));
  return changed;
}

// Before the run below: constants the benchmark functions read (no temporal dead zone).
/** The rows of the plain tools' runs, by step; kg apply's are named by theirs. */
const stepName: Record<string, string> = {
  baseline: 'wireguard-go + wg setconf + ip -batch + iptables-restore',
  'Node floor': 'node: read and JSON.parse the snapshot, then the same as the baseline',
};

/**
 * The floor of any Node kg apply on this machine: Node's start, the snapshot read and parsed as
 * JSON (nothing planned), then the baseline's script. (argv: the snapshot, the script.)
 */
const nodeFloor = `
const list = JSON.parse(require('node:fs').readFileSync(process.argv[1], 'utf8'));
if (!list.items.some((o) => o.metadata && o.metadata.name === 'node-00000')) process.exit(2);
process.exitCode = require('node:child_process').spawnSync('sh', [process.argv[2]], { stdio: 'ignore' }).status;
`;

const files = new Map<number, string>();
/** Which parts to run: kgctl, apply, run (default all). */
const parts = new Set((process.env['KILO_BENCH_PARTS'] ?? 'kgctl,apply,run,dual').split(','));
try {
  console.log(`## Whole processes at scale (load average ${load()} at start; the machine may be shared)\n`);
  console.log(`This machine: ${machineFigures()}\n`);
  for (const n of sizes) files.set(n, snapshot(n));
  if (parts.has('kgctl')) benchKgctl();
  if (process.getuid?.() !== 0 || process.env['KILO_BENCH_SKIP_DATAPLANE']) {
    console.log('kg apply, kg run: skipped (needs root for network namespaces)');
  } else {
    if (parts.has('apply')) benchApply();
    if (parts.has('run')) await benchRun();
  }
  if (parts.has('dual')) benchDualStack();
} finally {
  rmSync(dir, { recursive: true, force: true });
}

/**
 * kgctl's rows: wall (min, median) and CPU (median) seconds, peak RSS and RSS per byte of snapshot,
 * and growth: how many times the median time of the size before this one, next to how many times
 * the nodes (linear: the two agree).
 */
function benchKgctl(): void {
  console.log(
    '| command | nodes | snapshot MB | min s | median s | median CPU s | peak RSS MiB | RSS B per input B | time × (nodes ×) |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  const cluster = (n: number) => {
    const file = files.get(n) ?? snapshot(n);
    files.set(n, file);
    return file;
  };
  const row = (command: string, argv: (file: string) => string[], ns: number[], fileOf = cluster) => {
    let before: { n: number; median: number } | undefined;
    for (const n of ns) {
      const file = fileOf(n);
      const bytes = readFileSync(file).length;
      const rs = Array.from({ length: runs }, () => timed([kgctl, ...argv(file)]));
      const failed = rs.find((r) => !r.ok);
      if (failed) {
        console.log(`| ${command} | ${n} | ${(bytes / 1e6).toFixed(1)} | ${stats(rs)} | | | |`);
        before = undefined;
        continue;
      }
      const wall = rs.map((r) => r.seconds).sort((a, b) => a - b);
      const rss = Math.max(...rs.map((r) => r.rssMiB));
      const growth = before ? `${(median(wall) / before.median).toFixed(2)} (${(n / before.n).toFixed(1)})` : '–';
      console.log(
        `| ${command} | ${n} | ${(bytes / 1e6).toFixed(1)} | ${wall[0]!.toFixed(2)} | ${median(wall).toFixed(2)} | ${median(rs.map((r) => r.cpuSeconds)).toFixed(2)} | ${rss.toFixed(0)} | ${((rss * 1024 * 1024) / bytes).toFixed(0)} | ${growth} |`,
      );
      before = { n, median: median(wall) };
    }
  };
  row('kgctl plan -o json', (file) => ['plan', 'node-00000', '--cluster', file, '-o', 'json'], kgctlSizes);
  againstKilo(cluster);
  const stress = new Map(kgctlSizes.map((n) => [n, stressSnapshot(n)]));
  row(
    'kgctl plan, allowed-location IPs and Peers',
    (file) => ['plan', 'node-00000', '--cluster', file, '-o', 'json'],
    kgctlSizes,
    (n) => stress.get(n)!,
  );
  // Above 200 ready nodes graph draws a summary by location; --full draws every node and tunnel.
  row('kgctl graph (DOT)', (file) => ['graph', '--cluster', file], [500, 2000, 5000]);
  row('kgctl graph -o svg', (file) => ['graph', '--cluster', file, '-o', 'svg'], [500, 2000]);
  row('kgctl graph --full (DOT)', (file) => ['graph', '--cluster', file, '--full'], [200, 500]);
  console.log(`\nload average ${load()} after kgctl\n`);
}

/**
 * `kgctl plan -o json` next to Kilo's own Go planning the same cluster (bench/kilo-reference.ts),
 * whole processes, run in turns (kgctl, then Go, `runs` times) so that the machine's load falls on
 * both alike; the ratio of the medians. Each side's peer count is checked first: the same plan.
 */
function againstKilo(cluster: (n: number) => string): void {
  const kiloPlan = kiloPlanBinary(root, dir);
  if (!kiloPlan) {
    console.log('\nkgctl plan against Kilo: skipped (no kilo-plan; set KILO_BENCH_KILO_PLAN)\n');
    return;
  }
  console.log(
    `\n| kgctl plan against Kilo's Go (cross, node-00000, in turns) | nodes | kgctl median s (CPU) | Go median s (CPU) | kgctl ÷ Go | \`node -e 0\` median s (CPU) | peers | load |`,
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---|');
  for (const n of kiloSizes) {
    const file = cluster(n);
    const items = (JSON.parse(readFileSync(file, 'utf8')) as { items: KubeObject[] }).items;
    const input = join(dir, `kilo-plan-${n}.json`);
    writeFileSync(input, kiloPlanInput(items, 'node-00000', 'cross'));
    const argv = ['plan', 'node-00000', '--cluster', file, '--mesh-granularity', 'cross', '-o', 'json'];
    const ours = spawnSync(kgctl, argv, { encoding: 'utf8', maxBuffer: 1 << 30 });
    const theirs = spawnSync(kiloPlan, { input: readFileSync(input), encoding: 'utf8' });
    const peers = [
      ours.status === 0 ? (JSON.parse(ours.stdout) as { peers: unknown[] }).peers.length : NaN,
      theirs.status === 0 ? (JSON.parse(theirs.stdout) as { peers: number }).peers : NaN,
    ];
    if (peers[0] !== peers[1]) {
      console.log(`| | ${n} | kgctl plans ${peers[0]} peers, Kilo ${peers[1]}: not the same cluster | | | | | |`);
      continue;
    }
    const before = load();
    const k: Run[] = [];
    const g: Run[] = [];
    // Node's own start in the same turns: the part of kgctl's figure no code of kilo-ts can shorten.
    const floor: Run[] = [];
    for (let i = 0; i < Math.max(runs, 5); i++) {
      k.push(timed([kgctl, ...argv]));
      g.push(timed([kiloPlan], input));
      floor.push(timed([process.execPath, '-e', '0']));
    }
    const wall = (rs: Run[]) => median(rs.map((r) => r.seconds));
    const cpu = (rs: Run[]) => median(rs.map((r) => r.cpuSeconds));
    console.log(
      `| | ${n} | ${wall(k).toFixed(3)} (${cpu(k).toFixed(3)}) | ${wall(g).toFixed(3)} (${cpu(g).toFixed(3)}) | ${(wall(k) / wall(g)).toFixed(2)} | ${wall(floor).toFixed(3)} (${cpu(floor).toFixed(3)}) | ${peers[0]} | ${before} → ${load()} |`,
    );
  }
  console.log('');
}

/** node-00000's private NIC in namespace `ns`, holding its internal IP: routes to its location mates go there. */
function freshNamespace(ns: string): void {
  spawnSync('ip', ['netns', 'add', ns]);
  const setUp = 'ip link set lo up && ip link add priv0 type veth peer name priv1 && '.concat(
    'ip addr add 172.16.0.1/20 dev priv0 && ip link set priv0 up && ip link set priv1 up',
  );
  spawnSync('ip', ['netns', 'exec', ns, 'sh', '-c', setUp]);
}

function removeNamespace(ns: string, iface: string): void {
  // wireguard-go runs detached in the namespace: everything in it is ours.
  const pids = spawnSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' }).stdout.split('\n');
  for (const pid of pids.filter((p) => /^\d+$/.test(p))) spawnSync('kill', ['-9', pid]);
  spawnSync('ip', ['netns', 'del', ns]);
  // A killed wireguard-go leaves its socket and log behind.
  for (const ext of ['sock', 'log']) rmSync(`/var/run/wireguard/${iface}.${ext}`, { force: true });
}

/**
 * What `kg apply` wrote into namespace `ns`, as the plain tools would write it in one go
 * (bench/plain-tools.ts): a shell script that starts wireguard-go, sets the interface's address,
 * MTU and state, then `wg setconf`, one `ip -batch` of routes and rules, and `iptables-restore` of
 * each family's tables.
 */
function writesOf(ns: string, iface: string, into: string): string {
  const input = plainToolsInput(readDumps((argv) => commandOutput(['ip', 'netns', 'exec', ns, ...argv]), iface));
  const file = (name: string) => join(into, name);
  writeFileSync(file('wg.conf'), input.wgConf, { mode: 0o600 });
  writeFileSync(file('ip.batch'), input.ipBatch.map((l) => `${l}\n`).join(''));
  writeFileSync(file('ip6.batch'), input.ip6Batch.map((l) => `${l}\n`).join(''));
  writeFileSync(file('iptables'), input.iptables);
  writeFileSync(file('ip6tables'), input.ip6tables);
  writeFileSync(file('baseline.sh'), baselineScript(iface, input, file));
  const rules = input.ip6Batch.length + input.ipBatch.filter((l) => l.startsWith('rule ')).length;
  const peers = input.wgConf.split('\n').filter((l) => l.startsWith('[Peer]')).length;
  return `${input.ipBatch.length + input.ip6Batch.length - rules} routes, ${rules} rules, ${peers} peers`;
}

/**
 * KILO_BENCH_GRANULARITY: the --mesh-granularity values to apply with. kg apply's default,
 * `location`, makes 20 WireGuard peers of the 20 locations; `cross`, what the snapshot's nodes
 * announce, one per node outside the location (4,750 at 5,000 nodes).
 */
function benchApply(): void {
  for (const granularity of (process.env['KILO_BENCH_GRANULARITY'] ?? 'location,cross').split(','))
    benchApplyWith(granularity);
}

function benchApplyWith(granularity: string): void {
  console.log(
    `| kg apply (fresh namespace, wireguard-go), ${granularity} | nodes | step | min s | median s | peak RSS MiB | median CPU s |`,
  );
  console.log('|---|---:|---|---:|---:|---:|---:|');
  const contents: string[] = [];
  for (const n of agentSizes) {
    const file = files.get(n)!;
    const changed = withOneNodeChanged(file);
    const iface = `kbs${process.pid % 10000}`;
    const rows: Record<string, Run[]> = {
      first: [],
      unchanged: [],
      'one node changed': [],
      baseline: [],
      'Node floor': [],
    };
    for (let i = 0; i < runs; i++) {
      const ns = `kts-bs-${process.pid}-${i}`;
      const key = join(dir, `${ns}.key`);
      const apply = (cluster: string) =>
        timed(
          ['ip', 'netns', 'exec', ns, kg, 'apply', '--cluster', cluster, '--hostname', 'node-00000']
            .concat(['--key-file', key, '--interface', iface, '--encapsulate', 'never', '--mtu', '1420'])
            .concat(['--mesh-granularity', granularity])
            .concat(['--log-level', 'warn']),
        );
      const content = join(dir, `${ns}-writes`);
      mkdirSync(content, { recursive: true });
      freshNamespace(ns);
      try {
        rows['first']!.push(apply(file));
        if (i === 0) contents.push(`${n}: ${writesOf(ns, iface, content)}`);
        else writesOf(ns, iface, content);
        rows['unchanged']!.push(apply(file));
        rows['one node changed']!.push(apply(changed));
      } finally {
        removeNamespace(ns, iface);
      }
      // The same content written by the plain tools into a fresh namespace: the floor for a first apply.
      freshNamespace(ns);
      try {
        rows['baseline']!.push(timed(['ip', 'netns', 'exec', ns, 'sh', join(content, 'baseline.sh')]));
      } finally {
        removeNamespace(ns, iface);
      }
      // What any Node program pays here before the same writes: its start, the snapshot read and
      // parsed (nothing planned), then the plain tools. kg apply's first is measured against it too.
      freshNamespace(ns);
      try {
        rows['Node floor']!.push(
          timed(['ip', 'netns', 'exec', ns, process.execPath, '-e', nodeFloor, file, join(content, 'baseline.sh')]),
        );
      } finally {
        removeNamespace(ns, iface);
        rmSync(content, { recursive: true, force: true });
      }
    }
    for (const [step, rs] of Object.entries(rows))
      console.log(
        `| ${stepName[step] ?? 'kg apply'} | ${n} | ${step} | ${stats(rs)} | ${median(rs.map((r) => r.cpuSeconds)).toFixed(2)} |`,
      );
    const wall = (rs: Run[]) => median(rs.map((r) => r.seconds));
    console.log(
      `| first ÷ baseline (medians) | ${n} | ${(wall(rows['first']!) / wall(rows['baseline']!)).toFixed(2)}× | | | | load ${load()} |`,
    );
    console.log(
      `| Node floor ÷ baseline, first ÷ Node floor (medians) | ${n} | ${(wall(rows['Node floor']!) / wall(rows['baseline']!)).toFixed(2)}×, ${(wall(rows['first']!) / wall(rows['Node floor']!)).toFixed(2)}× | | | | |`,
    );
  }
  console.log(`\n${granularity} writes: ${contents.join('; ')}; load average ${load()} at the end\n`);
}

/**
 * Dual-stack next to IPv4 in the same run, runs interleaved so that the machine's load moves both
 * alike (issue 32: target ≤ 1.3×): `kgctl plan -o json` and the first `kg apply` (cross, fresh
 * namespace) of node-00000 at KILO_BENCH_DUAL_SIZES nodes (default 5,000), the same cluster with
 * and without IPv6 (bench/generate.ts dualStack), --subnet of one family and of two.
 */
function benchDualStack(): void {
  console.log('\n## Dual-stack next to IPv4 (same clusters, runs interleaved)\n');
  console.log(
    '| command | nodes | IPv4 min s | IPv4 median s | dual-stack min s | dual-stack median s | dual ÷ IPv4 (medians) |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  const root = process.getuid?.() === 0 && !process.env['KILO_BENCH_SKIP_DATAPLANE'];
  for (const n of (process.env['KILO_BENCH_DUAL_SIZES'] ?? '5000').split(',').map(Number)) {
    const items = generateCluster(n, 20, 10);
    const files = { v4: join(dir, `v4-${n}.json`), dual: join(dir, `dual-${n}.json`) };
    writeFileSync(files.v4, JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
    writeFileSync(files.dual, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: dualStack(items) }));
    const subnet = { v4: ['--subnet', '10.4.0.0/16'], dual: ['--subnet', '10.4.0.0/16,fd4b::/64'] };
    const plan = (k: 'v4' | 'dual') =>
      timed([kgctl, 'plan', 'node-00000', '--cluster', files[k], '-o', 'json', ...subnet[k]]);
    const apply = (k: 'v4' | 'dual', i: number) => {
      const ns = `kts-bd-${process.pid}-${i}`;
      const iface = `kbd${process.pid % 10000}`;
      freshNamespace(ns);
      // node-00000's IPv6 internal IP (the IPv6 routes' source), in both runs alike.
      spawnSync('ip', ['-n', ns, '-6', 'addr', 'add', 'fd10:10::1/64', 'dev', 'priv0', 'nodad']);
      try {
        return timed(
          ['ip', 'netns', 'exec', ns, kg, 'apply', '--cluster', files[k], '--hostname', 'node-00000']
            .concat(['--key-file', join(dir, `${ns}.key`), '--interface', iface, '--encapsulate', 'never'])
            .concat(['--mtu', '1420', '--mesh-granularity', 'cross', '--log-level', 'warn', ...subnet[k]]),
        );
      } finally {
        removeNamespace(ns, iface);
      }
    };
    const rows: [string, (k: 'v4' | 'dual', i: number) => Run][] = [['kgctl plan -o json', plan]];
    if (root) rows.push(['kg apply, first (cross)', apply]);
    for (const [command, run] of rows) {
      const rs = { v4: [] as Run[], dual: [] as Run[] };
      for (let i = 0; i < runs; i++) {
        rs.v4.push(run('v4', i));
        rs.dual.push(run('dual', i));
      }
      const wall = (xs: Run[]) => median(xs.map((r) => r.seconds));
      const [a, b] = [stats(rs.v4).split(' | '), stats(rs.dual).split(' | ')];
      console.log(
        `| ${command} | ${n} | ${a[0]} | ${a[1]} | ${b[0]} | ${b[1]} | ${(wall(rs.dual) / wall(rs.v4)).toFixed(2)}× |`,
      );
    }
  }
  console.log(`\nload average ${load()} after dual-stack\n`);
}

async function benchRun(): Promise<void> {
  const windowS = Number(process.env['KILO_BENCH_RUN_WINDOW'] ?? 30);
  const joins = Number(process.env['KILO_BENCH_RUN_JOINS'] ?? 9);
  console.log(`\n## kg run under heartbeats (every node's last-seen once per 30 s; CPU over ${windowS} s)\n`);
  console.log(
    '| nodes | start → synced s | synced → first apply s | heartbeats/s (most late s) | window from s | passes in window | CPU % of a core (main thread; children) | RSS MiB (median / max in window) | peak RSS MiB | join p50 ms | join max ms | join pass parse/plan/publish/apply ms | longest log line | load |',
  );
  console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|');
  const rss = new Map<number, number>();
  for (const n of agentSizes) {
    const before = load();
    try {
      const r = await benchRunOnce(n, dir, { windowS, joins });
      rss.set(n, r.rssMiB);
      console.log(
        `| ${n} | ${r.toSyncedS.toFixed(2)} | ${r.syncedToAppliedS.toFixed(2)} | ${r.heartbeatsPerS.toFixed(0)} (${r.heartbeatsLateS.toFixed(0)}) | ${r.windowStartS.toFixed(0)} | ${r.passesInWindow} | ${r.cpuPercent.toFixed(1)} (${r.mainThreadCpuPercent.toFixed(1)}; ${r.childrenCpuPercent.toFixed(1)}) | ${r.rssMiB.toFixed(0)} / ${r.rssMaxMiB.toFixed(0)} | ${r.peakRssMiB.toFixed(0)} | ${r.joinP50Ms}${r.joinFailure ? ` (${r.joins} joins; failed: ${r.joinFailure})` : ''} | ${r.joinMaxMs} | ${r.joinPhasesMs ?? 'at debug level'} | ${r.longestLogLine} | ${before} → ${load()} |`,
      );
    } catch (e) {
      console.log(`| ${n} | failed: ${(e as Error).message.slice(0, 200)} | | | | | | | | | | | | ${before} |`);
    }
  }
  const [small, big] = [Math.min(...rss.keys()), Math.max(...rss.keys())];
  if (big > small) {
    const slope = ((rss.get(big)! - rss.get(small)!) * 2 ** 20) / (big - small);
    console.log(`\nagent RSS per node (${small} → ${big} nodes, steady state): ${(slope / 1024).toFixed(1)} KiB`);
  }
  const kept = keptBytesPerNode(5000);
  console.log(
    `kept per node at 5,000 (heap after GC, in this process): ${kept.object.toFixed(0)} B the cached Node, ${kept.withParse.toFixed(0)} B with its parse`,
  );
}
