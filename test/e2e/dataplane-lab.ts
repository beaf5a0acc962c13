/**
 * A lab for black-box dataplane tests: network namespaces that stand for nodes, the BUILT `kg apply`
 * run inside them as a real process, `kgctl plan -o json` as the oracle, and readers that take the
 * machine's state back from the kernel (`wg show dump`, `ip -j`, `iptables-save`), never from kilo-ts.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import type { TestContext } from 'node:test';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Plan } from '../../src/mesh/types.js';
import type { KubeObject } from '../../src/model/parse.js';
import { generatePrivateKey, publicKeyOf } from '../../src/wireguard/keys.js';
import { ensureBuilt, root } from '../cli/built.js';
import { node } from '../helpers/cluster.js';
import { createNamespace, type TestNamespace } from '../helpers/netns.js';
import { nodeCommand } from '../../scripts/node-flags.mjs';
import { iptablesRulesOf } from '../../src/dataplane/iptables/rules.js';

const kgBin = join(root, 'bin', 'kg');
const kgctlBin = join(root, 'bin', 'kgctl');

/** One JSON line of kg's log (pino, on stderr). */
export interface LogLine {
  level: number;
  msg: string;
  err?: string;
  writes?: number;
  routes?: number;
  firewall?: number;
  links?: number;
  wireGuard?: { added: string[]; removed: string[]; updated: string[] };
  [k: string]: unknown;
}

export interface ApplyRun {
  status: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  logs: LogLine[];
  /** The "applied" line of the (last) reconcile. */
  applied: LogLine | undefined;
  /** Every error kg logged: "msg: [object: ]err". */
  errors: string[];
}

function parseLogs(stderr: string): LogLine[] {
  return stderr.split('\n').flatMap((l) => {
    if (!l.startsWith('{')) return [];
    try {
      return [JSON.parse(l) as LogLine];
    } catch {
      return [];
    }
  });
}

function runOf(status: number | null, signal: NodeJS.Signals | null, stderr: string): ApplyRun {
  const logs = parseLogs(stderr);
  return {
    status,
    signal,
    stderr,
    logs,
    applied: logs.filter((l) => l.msg === 'applied').at(-1),
    errors: logs
      .filter((l) => l.level >= 50)
      .map((l) => `${l.msg}: ${typeof l['object'] === 'string' ? `${l['object']}: ` : ''}${l.err ?? ''}`),
  };
}

/** A node of the lab: its namespace and the key file its kg apply uses. */
export interface LabNode {
  name: string;
  ns: TestNamespace;
  keyFile: string;
  publicKey: string;
}

/**
 * Owns everything a test makes: namespaces, the processes in them (kg and the detached
 * wireguard-go it starts) and a temp dir. destroy() removes all of it, also after a failure.
 */
export class Lab {
  readonly dir = mkdtempSync(join(tmpdir(), 'kt-e2e-'));
  private readonly namespaces: TestNamespace[] = [];
  private readonly children = new Set<ChildProcess>();
  private clusterCount = 0;

  constructor() {
    ensureBuilt();
    mkdirSync('/var/run/wireguard', { recursive: true });
  }

  /** A namespace for node `name` with a fresh private key in a 0600 file. */
  node(name: string): LabNode {
    const ns = createNamespace('kte2e');
    this.namespaces.push(ns);
    const privateKey = generatePrivateKey();
    const keyFile = join(this.dir, `${name}.key`);
    writeFileSync(keyFile, `${privateKey}\n`, { mode: 0o600 });
    chmodSync(keyFile, 0o600);
    return { name, ns, keyFile, publicKey: publicKeyOf(privateKey) };
  }

  /** Writes a snapshot (a List) atomically, so a watching kg never reads half a file. */
  writeCluster(objects: readonly KubeObject[], path = join(this.dir, `cluster-${this.clusterCount++}.json`)): string {
    const tmp = `${path}.tmp`;
    writeFileSync(tmp, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
    renameSync(tmp, path);
    return path;
  }

  /** Starts the built `kg apply` inside the node's namespace (with its own /var/run/wireguard). */
  start(
    node: LabNode,
    cluster: string,
    flags: readonly string[],
  ): { child: ChildProcess; done: Promise<ApplyRun>; stderr: () => string } {
    const argv = [
      'netns',
      'exec',
      node.ns.name,
      'sh',
      '-c',
      'mount --bind "$0" /var/run/wireguard && exec "$@"',
      node.ns.runDir,
      ...nodeCommand(kgBin),
      'apply',
      '--cluster',
      cluster,
      '--hostname',
      node.name,
      '--key-file',
      node.keyFile,
      '--mtu',
      '1380',
      ...flags,
    ];
    const child = spawn('ip', argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.children.add(child);
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    child.stdout.on('data', () => {});
    const done = new Promise<ApplyRun>((resolve) =>
      child.on('close', (status, signal) => {
        this.children.delete(child);
        resolve(runOf(status, signal, stderr));
      }),
    );
    return { child, done, stderr: () => stderr };
  }

  /** One `kg apply` run to completion. */
  apply(node: LabNode, cluster: string, flags: readonly string[]): Promise<ApplyRun> {
    return this.start(node, cluster, flags).done;
  }

  /** Removes every process, namespace and file the test made. */
  async destroy(): Promise<void> {
    for (const child of this.children) if (child.pid) spawnSync('kill', ['-9', String(child.pid)]);
    for (const ns of this.namespaces) {
      // wireguard-go is detached from kg: it is found by namespace, and these namespaces are ours.
      for (let i = 0; i < 50; i++) {
        const pids = namespacePids(ns.name);
        if (pids.length === 0) break;
        for (const pid of pids) spawnSync('kill', ['-9', String(pid)]);
        await new Promise((r) => setTimeout(r, 50));
      }
      ns.destroy();
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** PIDs of the processes in a namespace we created. */
export function namespacePids(ns: string): number[] {
  const r = spawnSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' });
  return r.stdout
    .split('\n')
    .filter((l) => /^\d+$/.test(l.trim()))
    .map(Number);
}

/** The command line of a PID, '' once it is gone. */
export function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
  } catch {
    return '';
  }
}

/** Every process below a PID: kg runs its commands through a helper process (src/dataplane/spawner.ts). */
export function descendantsOf(pid: number): number[] {
  const out: number[] = [];
  for (let next = childrenOf(pid); next.length > 0; next = next.flatMap(childrenOf)) out.push(...next);
  return out;
}

/** Direct children of a PID (from /proc, no process spawned: cheap enough to poll every few ms). */
export function childrenOf(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((tid) =>
      readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8')
        .split(' ')
        .filter((x) => x.trim() !== '')
        .map(Number),
    );
  } catch {
    return [];
  }
}

/** The oracle: what `kgctl plan` says the agent on `node` programs with these mesh flags. */
export function oraclePlan(cluster: string, node: string, flags: readonly string[]): Plan {
  const out = execFileSync(process.execPath, [kgctlBin, 'plan', node, '--cluster', cluster, '-o', 'json', ...flags], {
    encoding: 'utf8',
  });
  return JSON.parse(out) as Plan;
}

/** oraclePlan for several flag sets at once (one kgctl process each, run side by side). */
export function oraclePlans(cluster: string, node: string, flagSets: readonly (readonly string[])[]): Promise<Plan[]> {
  return Promise.all(
    flagSets.map(
      (flags) =>
        new Promise<Plan>((resolve, reject) =>
          execFile(
            process.execPath,
            [kgctlBin, 'plan', node, '--cluster', cluster, '-o', 'json', ...flags],
            { encoding: 'utf8', maxBuffer: 1 << 26 },
            (err, stdout) => (err ? reject(new Error(err.message)) : resolve(JSON.parse(stdout) as Plan)),
          ),
        ),
    ),
  );
}

// ---------------------------------------------------------------------------------------------
// The machine as the kernel shows it, in the same text form the expected state is rendered in.

export interface Devices {
  kilo: string;
  private: string | null;
  tunnel: string | null;
}

export interface KernelState {
  /** "PUBKEY ENDPOINT ALLOWED,IPS KEEPALIVE", sorted; absent interface → null. */
  wireGuard: { publicKey: string; listenPort: number; peers: string[] } | null;
  /** Addresses of the Kilo interface (link-local IPv6 left out); null when it does not exist. */
  addresses: string[] | null;
  up: boolean | null;
  /** Kilo's routes (proto 107), sorted. */
  routes: string[];
  /** Kilo's rules (priority 1107), sorted. */
  rules: string[];
  /** Kilo's firewall: KILO-* chain declarations, their rules in order, Kilo-commented jumps. */
  firewall: string[];
}

function host(cidr: string): string {
  if (cidr === 'default') return cidr;
  return cidr.includes('/') ? cidr : `${cidr}/${cidr.includes(':') ? 128 : 32}`;
}

export function routeText(r: {
  dst: string;
  gw: string | null;
  dev: string;
  src: string | null;
  table: string;
  onlink: boolean;
}): string {
  return `${host(r.dst)}${r.gw ? ` via ${r.gw}` : ''} dev ${r.dev}${r.src ? ` src ${r.src}` : ''} table ${r.table}${r.onlink ? ' onlink' : ''}`;
}

export function ruleText(r: { src: string | null; dst: string | null; iif: string | null; table: string }): string {
  return `from ${r.src ? host(r.src) : 'all'}${r.dst ? ` to ${host(r.dst)}` : ''}${r.iif ? ` iif ${r.iif}` : ''} lookup ${r.table}`;
}

interface IpRoute {
  dst: string;
  gateway?: string;
  dev?: string;
  prefsrc?: string;
  flags?: string[];
  table?: string;
  protocol?: string;
  type?: string;
}

interface IpRule {
  priority: number;
  src?: string;
  srclen?: number;
  dst?: string;
  dstlen?: number;
  iif?: string;
  table: string;
}

function ipJson<T>(ns: TestNamespace, args: string): T[] {
  const out = ns.sh(`ip -j ${args}`).trim();
  return (out ? JSON.parse(out) : []) as T[];
}

/** Every route in every table of both families, as text with its protocol. */
export function allRoutes(ns: TestNamespace): { text: string; protocol: string; dev: string }[] {
  return ['-4', '-6'].flatMap((f) =>
    ipJson<IpRoute>(ns, `${f} route show table all`).map((r) => ({
      text: `${r.type && r.type !== 'unicast' ? `${r.type} ` : ''}${routeText({
        dst: r.dst,
        gw: r.gateway ?? null,
        dev: r.dev ?? '-',
        src: r.prefsrc ?? null,
        table: r.table ?? 'main',
        onlink: r.flags?.includes('onlink') ?? false,
      })} proto ${r.protocol ?? '?'}`,
      protocol: String(r.protocol ?? ''),
      dev: r.dev ?? '',
    })),
  );
}

export function allRules(ns: TestNamespace): { text: string; priority: number }[] {
  return ['-4', '-6'].flatMap((f) =>
    ipJson<IpRule>(ns, `${f} rule show`).map((r) => ({
      priority: r.priority,
      text: `${ruleText({
        src: r.src && r.src !== 'all' ? `${r.src}/${r.srclen ?? (r.src.includes(':') ? 128 : 32)}` : null,
        dst: r.dst ? `${r.dst}/${r.dstlen ?? (r.dst.includes(':') ? 128 : 32)}` : null,
        iif: r.iif ?? null,
        table: r.table,
      })} priority ${r.priority}`,
    })),
  );
}

const protocolNumbers: Record<string, string> = {
  icmp: '1',
  ipencap: '4',
  ipip: '4',
  tcp: '6',
  udp: '17',
  'ipv6-icmp': '58',
  icmpv6: '58',
};

/** Splits an iptables-save line into arguments (double quotes group, backslash escapes). */
function tokens(line: string): string[] {
  const out: string[] = [];
  const re = /"((?:[^"\\]|\\.)*)"|(\S+)/g;
  for (const m of line.matchAll(re)) out.push(m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[2]!);
  return out;
}

/**
 * One rule in a comparable form: the comment taken out, protocols as numbers, bare addresses as
 * host prefixes, the implicit `-m tcp`/`-m udp` iptables-save adds dropped.
 */
export function normaliseRule(args: readonly string[], comment: string | null): string {
  const out: string[] = [];
  let note = comment;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '-m' && args[i + 1] === 'comment') {
      i++;
      continue;
    }
    if (a === '--comment') {
      note = args[++i] ?? '';
      continue;
    }
    if (a === '-m' && (args[i + 1] === 'tcp' || args[i + 1] === 'udp') && out.at(-2) === '-p') {
      i++;
      continue;
    }
    if (a === '-p' && args[i + 1] !== undefined) {
      out.push(a, protocolNumbers[args[i + 1]!] ?? args[i + 1]!);
      i++;
      continue;
    }
    if ((a === '-s' || a === '-d') && args[i + 1] !== undefined) {
      out.push(a, host(args[i + 1]!));
      i++;
      continue;
    }
    out.push(a);
  }
  return `${out.join(' ')}${note !== null ? ` # ${note}` : ''}`;
}

export interface SavedFirewall {
  /** Kilo's part, as in KernelState.firewall. */
  kilo: string[];
  /** Everything else: chain declarations (without counters) and rules. */
  foreign: string[];
}

/** iptables-save and ip6tables-save of the namespace, split into Kilo's part and the rest. */
export function savedFirewall(ns: TestNamespace): SavedFirewall {
  const kilo: string[] = [];
  const foreign: string[] = [];
  for (const [family, bin] of [
    [4, 'iptables-save'],
    [6, 'ip6tables-save'],
  ] as const) {
    let table = '';
    const builtin = new Set<string>();
    for (const raw of ns.sh(bin).split('\n')) {
      const line = raw.trim();
      if (line === '' || line.startsWith('#') || line === 'COMMIT') continue;
      if (line.startsWith('*')) {
        table = line.slice(1);
        continue;
      }
      if (line.startsWith(':')) {
        const [name, policy] = line.slice(1).split(/\s+/);
        if (policy !== '-') builtin.add(`${table} ${name}`);
        (name!.startsWith('KILO-') ? kilo : foreign).push(`${family} ${table} chain ${name} ${policy}`);
        continue;
      }
      const args = tokens(line);
      assert.equal(args[0], '-A', `unexpected iptables-save line ${line}`);
      const chain = args[1]!;
      const text = `${family} ${table} ${chain}: ${normaliseRule(args.slice(2), null)}`;
      const kiloComment = /--comment "?Kilo:/.test(line);
      (chain.startsWith('KILO-') || (builtin.has(`${table} ${chain}`) && kiloComment) ? kilo : foreign).push(text);
    }
  }
  // Jumps in built-in chains are compared as a multiset; rules inside Kilo's chains keep their order.
  return { kilo: sortJumps(kilo), foreign };
}

function sortJumps(lines: string[]): string[] {
  const chains = lines.filter((l) => / chain KILO-/.test(l)).sort();
  const inKilo = lines.filter((l) => /^\d \S+ KILO-/.test(l));
  const jumps = lines.filter((l) => !chains.includes(l) && !inKilo.includes(l)).sort();
  return [...chains, ...inKilo.sort(stableByChain(inKilo)), ...jumps];
}

/** Orders by "family table chain" and keeps the original order inside a chain. */
function stableByChain(lines: string[]): (a: string, b: string) => number {
  const at = new Map(lines.map((l, i) => [l, i]));
  const head = (l: string) => l.slice(0, l.indexOf(':'));
  return (a, b) => head(a).localeCompare(head(b)) || at.get(a)! - at.get(b)!;
}

/** The machine's Kilo state as the kernel and the tools show it. */
export function readKernel(ns: TestNamespace, kilo = 'kilo0'): KernelState {
  let wireGuard: KernelState['wireGuard'] = null;
  const dump = spawnSync(
    'ip',
    ['netns', 'exec', ns.name, 'sh', '-c', `mount --bind "$0" /var/run/wireguard && wg show ${kilo} dump`, ns.runDir],
    { encoding: 'utf8' },
  );
  if (dump.status === 0) {
    const [head, ...peers] = dump.stdout.trim().split('\n');
    // The first field of the interface line is the private key: it is dropped unread.
    const [, publicKey, listenPort] = head!.split('\t');
    wireGuard = {
      publicKey: publicKey!,
      listenPort: Number(listenPort),
      peers: peers
        .filter((l) => l !== '')
        .map((l) => {
          const [key, , endpoint, allowed, , , , keepalive] = l.split('\t');
          return `${key} ${endpoint} ${allowed === '(none)' ? '' : allowed!.split(',').sort().join(',')} ${keepalive}`;
        })
        .sort(),
    };
  }
  const link = spawnSync('ip', ['-n', ns.name, '-j', 'addr', 'show', 'dev', kilo], { encoding: 'utf8' });
  let addresses: string[] | null = null;
  let up: boolean | null = null;
  if (link.status === 0) {
    const [entry] = JSON.parse(link.stdout) as {
      flags?: string[];
      addr_info?: { family: string; local: string; prefixlen: number; scope: string }[];
    }[];
    addresses = (entry?.addr_info ?? [])
      .filter((a) => !(a.family === 'inet6' && a.scope === 'link'))
      .map((a) => `${a.local}/${a.prefixlen}`)
      .sort();
    up = entry?.flags?.includes('UP') ?? false;
  }
  return {
    wireGuard,
    addresses,
    up,
    routes: allRoutes(ns)
      .filter((r) => r.protocol === '107')
      .map((r) => r.text.replace(/ proto 107$/, ''))
      .sort(),
    rules: allRules(ns)
      .filter((r) => r.priority === 1107)
      .map((r) => r.text.replace(/ priority 1107$/, ''))
      .sort(),
    firewall: savedFirewall(ns).kilo,
  };
}

/** What the machine must show after applying `plan`: routes on a missing device are left out. */
export function expectedKernel(plan: Plan, devices: Devices, publicKey: string): KernelState {
  const dev = (role: string) => (devices as unknown as Record<string, string | null>)[role] ?? null;
  const firewall: string[] = [];
  for (const c of iptablesRulesOf(plan.firewall).chains) firewall.push(`${c.family} ${c.table} chain ${c.name} -`);
  for (const r of iptablesRulesOf(plan.firewall).rules)
    firewall.push(`${r.family} ${r.table} ${r.chain}: ${normaliseRule(r.args, r.comment)}`);
  return {
    wireGuard: {
      publicKey,
      listenPort: plan.listenPort,
      peers: plan.peers
        .map(
          (p) =>
            `${p.publicKey} ${p.endpoint ?? '(none)'} ${[...p.allowedIPs].sort().join(',')} ${p.persistentKeepalive || 'off'}`,
        )
        .sort(),
    },
    addresses: plan.wireGuardIP ? [plan.wireGuardIP] : [],
    up: plan.interfaceUp,
    routes: [
      ...plan.routes
        .filter((r) => dev(r.dev) !== null)
        .map((r) => routeText({ ...r, dev: dev(r.dev)!, table: String(r.table) })),
      // The fail-closed guard: no device (IPv6 gives the loopback), no gateway, whatever the devices.
      ...(plan.guard ?? []).map(
        (g) =>
          `blackhole ${routeText({ dst: g.dst, gw: null, dev: g.dst.includes(':') ? 'lo' : '-', src: null, table: String(g.table), onlink: false })}`,
      ),
    ].sort(),
    rules: [
      ...new Set(
        plan.rules.map((r) => ruleText({ ...r, iif: r.iif === 'kilo' ? devices.kilo : null, table: String(r.table) })),
      ),
    ].sort(),
    firewall: sortJumps(firewall),
  };
}

/** Asserts the machine equals the plan, part by part (so a failure says which part differs). */
export function assertKernelIs(
  ns: TestNamespace,
  plan: Plan,
  devices: Devices,
  publicKey: string,
  what: string,
): KernelState {
  const actual = readKernel(ns, devices.kilo);
  const want = expectedKernel(plan, devices, publicKey);
  assert.deepEqual(actual.wireGuard, want.wireGuard, `${what}: WireGuard interface and peers`);
  assert.deepEqual(actual.addresses, want.addresses, `${what}: addresses of ${devices.kilo}`);
  assert.equal(actual.up, want.up, `${what}: ${devices.kilo} up`);
  assert.deepEqual(actual.routes, want.routes, `${what}: Kilo's routes (proto 107)`);
  assert.deepEqual(actual.rules, want.rules, `${what}: Kilo's rules (priority 1107)`);
  assert.deepEqual(actual.firewall, want.firewall, `${what}: Kilo's iptables chains and rules`);
  return actual;
}

/** A veth pair inside one namespace, the first end holding `address`: a node's private NIC. */
export function privateInterface(ns: TestNamespace, name: string, address: string): void {
  ns.sh(
    `ip link add ${name} type veth peer name ${name}p && ip addr add ${address} dev ${name} && ip link set ${name} up && ip link set ${name}p up`,
  );
}

/** The usual start of a dataplane e2e test: a Lab (destroyed after the test) and eu-1 with its LAN NIC. */
export function labWithEu1(t: TestContext): { lab: Lab; eu1: LabNode } {
  const lab = new Lab();
  t.after(() => lab.destroy());
  const eu1 = lab.node('eu-1');
  privateInterface(eu1.ns, 'lan0', '192.168.10.1/24');
  return { lab, eu1 };
}

/** Waits until `f` is true (polling), or fails naming `what`. */
export async function until(what: string, f: () => boolean, timeoutMs = 60_000, everyMs = 50): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!f()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * The two-location cluster the dataplane e2e tests share: eu-1 and eu-2 in eu (192.168.10.0/24),
 * us-1 (and, with `us2`, us-2) in us (192.168.20.0/24); keys given for the nodes a test runs.
 */
export function twoLocationNodes(
  keys: { eu1: string; us1: string; us2?: string },
  opts: { us2?: boolean } = {},
): KubeObject[] {
  const at = (name: string, location: string, lan: string, host: number, pod: number, key?: string) =>
    node(name, {
      location,
      internalIP: `${lan}.${host}/24`,
      endpoint: `172.30.0.${pod}:51820`,
      podCIDR: `10.42.${pod}.0/24`,
      ...(key ? { key } : {}),
    });
  return [
    at('eu-1', 'eu', '192.168.10', 1, 1, keys.eu1),
    at('eu-2', 'eu', '192.168.10', 2, 2),
    at('us-1', 'us', '192.168.20', 1, 3, keys.us1),
    ...(opts.us2 ? [at('us-2', 'us', '192.168.20', 2, 4, keys.us2)] : []),
  ];
}
