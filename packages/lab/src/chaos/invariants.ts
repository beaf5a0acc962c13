import { readdirSync, readFileSync } from 'node:fs';
import { iptablesRulesOf } from '../../../../src/dataplane/iptables/rules.js';
import { planOf } from '../../../../src/mesh/compute.js';
import { defaultMeshOptions } from '../../../../src/mesh/options.js';
import type { Plan } from '../../../../src/mesh/types.js';
import { parseCluster } from '../../../../src/model/parse.js';
import { judgeReadiness, type ReadinessMemory } from '../../../../src/model/ready.js';
import type { Lab } from '../lab.js';
import { dataplaneFingerprint } from '../observe.js';
import { locationLabel } from '../layout.js';
import { runAsync } from '../sh.js';

/**
 * The desired state of every node, as `kgctl plan NODE --cluster <the API server's state file>`
 * computes it (the same functions, in this process: a kgctl process per node per second would
 * cost more than the agents), but with readiness judged as a running agent judges it: at the
 * live time, with the check-ins seen so far (`memory`, kept across calls) — offline, kgctl judges
 * at the newest last-seen and would drop, right after an API server outage, the nodes that the
 * agents rightly keep until every node has had its turn to check in again (model/ready.ts). The
 * lab's agents run with --encapsulate=never and defaults otherwise.
 */
export function desiredPlans(
  lab: Lab,
  memory: ReadinessMemory | null,
  now = Math.floor(Date.now() / 1000),
): { plans: Map<string, Plan>; memory: ReadinessMemory | null } {
  const list = JSON.parse(readFileSync(lab.clusterFile, 'utf8')) as { items?: unknown[] };
  const cluster = parseCluster(list.items ?? [], { topologyLabel: locationLabel });
  const judged = judgeReadiness(memory, cluster.nodes, now);
  const options = { ...defaultMeshOptions, granularity: lab.options.granularity, encapsulate: 'never' as const };
  const plans = new Map<string, Plan>();
  for (const n of lab.nodes) {
    try {
      plans.set(n.name, planOf(cluster, n.name, options, judged.at));
    } catch {
      // Not (yet) a ready node of the cluster: nothing is desired of it, nothing checked.
    }
  }
  return { plans, memory: judged.memory };
}

const hostLen = (ip: string) => (ip.includes(':') ? 128 : 32);
const cidr = (dst: string) => (dst === 'default' ? '0.0.0.0/0' : dst.includes('/') ? dst : `${dst}/${hostLen(dst)}`);

/** What of Kilo's a node's kernel holds, as comparable lines; read with a handful of processes. */
async function kernelItems(lab: Lab, node: string): Promise<string[] | null> {
  const n = lab.node(node);
  const ip = (args: string[]) => runAsync(['ip', '-n', n.ns, '-j', ...args], 10_000);
  const [routes, rules, addrs, ipt, wg] = await Promise.all([
    ip(['route', 'show', 'table', 'all', 'proto', '107']),
    ip(['rule', 'show']),
    ip(['addr', 'show', 'dev', 'kilo0']),
    runAsync(['ip', 'netns', 'exec', n.ns, 'iptables-save'], 10_000),
    runAsync(
      [
        'ip',
        'netns',
        'exec',
        n.ns,
        'sh',
        '-c',
        `mount --bind "$0" /var/run/wireguard && exec wg show kilo0 peers`,
        lab.runDir(node),
      ],
      10_000,
    ),
  ]);
  if ([routes, rules, ipt].some((r) => r.code !== 0)) return null;
  const out: string[] = [];
  const json = <T>(s: string): T[] => {
    try {
      return JSON.parse(s || '[]') as T[];
    } catch {
      return [];
    }
  };
  for (const r of json<{ dst: string; table?: string }>(routes.stdout))
    out.push(`route ${r.table ?? 'main'} ${cidr(r.dst)}`);
  for (const r of json<{ priority: number; table?: string }>(rules.stdout))
    if (r.priority === 1107) out.push(`rule table ${r.table ?? ''}`);
  for (const l of json<{ addr_info?: { family: string; local: string; prefixlen: number }[] }>(addrs.stdout))
    for (const a of l.addr_info ?? []) if (a.family === 'inet') out.push(`addr ${a.local}/${a.prefixlen}`);
  let table = '';
  for (const line of ipt.stdout.split('\n')) {
    if (line.startsWith('*')) table = line.slice(1);
    const m = /^:(KILO-\S+)/.exec(line);
    if (m) out.push(`chain ${table} ${m[1]}`);
  }
  if (wg.code === 0) for (const k of wg.stdout.split('\n').filter(Boolean)) out.push(`peer ${k}`);
  return out;
}

function planItems(p: Plan): Set<string> {
  const out = new Set<string>();
  for (const r of p.routes) out.add(`route ${r.table} ${cidr(r.dst)}`);
  for (const g of p.guard ?? []) out.add(`route ${g.table} ${cidr(g.dst)}`);
  for (const r of p.rules) out.add(`rule table ${r.table}`);
  if (p.wireGuardIP && p.interfaceUp) out.add(`addr ${p.wireGuardIP}`);
  for (const c of iptablesRulesOf(p.firewall).chains) if (c.family === 4) out.add(`chain ${c.table} ${c.name}`);
  for (const peer of p.peers) out.add(`peer ${peer.publicKey}`);
  return out;
}

/** Kernel items of a node that its current plan does not have. */
export async function staleItems(lab: Lab, node: string, plan: Plan): Promise<string[]> {
  const want = planItems(plan);
  return ((await kernelItems(lab, node)) ?? []).filter((i) => !want.has(i));
}

/**
 * Routes, rules, iptables, kilo0's address and WireGuard peers with their allowed IPs; null when
 * a command failed (a loaded machine times out now and then): unknown, not empty.
 */
export async function dataplaneState(lab: Lab, node: string): Promise<string[] | null> {
  const n = lab.node(node);
  const wg = await runAsync(
    [
      'ip',
      'netns',
      'exec',
      n.ns,
      'sh',
      '-c',
      `mount --bind "$0" /var/run/wireguard && exec wg show kilo0 allowed-ips`,
      lab.runDir(node),
    ],
    20_000,
  );
  if (wg.code !== 0) return null;
  try {
    return [
      ...dataplaneFingerprint(n.ns),
      ...wg.stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => `wg ${l}`),
    ];
  } catch {
    return null;
  }
}

/** An agent's footprint: resident memory, open descriptors, descendant processes. */
export interface Footprint {
  at: number;
  rssKiB: number;
  fds: number;
  children: number;
}

export function footprint(pid: number): Footprint | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rssKiB = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    const fds = readdirSync(`/proc/${pid}/fd`).length;
    return { at: Date.now(), rssKiB, fds, children: descendants(pid) };
  } catch {
    return null;
  }
}

function descendants(root: number): number {
  const parent = new Map<number, number>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      // The command name may hold spaces and parentheses: the fields after its last ')' are fixed.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parent.set(Number(d), ppid);
    } catch {
      // gone meanwhile
    }
  }
  let count = 0;
  for (const pid of parent.keys()) {
    let p = parent.get(pid);
    for (let hops = 0; p !== undefined && p > 1 && hops < 64; hops++) {
      if (p === root) {
        count++;
        break;
      }
      p = parent.get(p);
    }
  }
  return count;
}
