/**
 * Location-leader failover in the lab: break the leader of a location one of three ways while a
 * pod in another location pings a pod of that location ten times a second, and count the
 * pings lost. Shared by the end-to-end test and bench/failover.ts.
 */
import { request } from 'node:http';
import { leaseName } from '../../../src/election/lease-name.js';
import type { Lab } from './lab.js';
import { locationName } from './layout.js';
import { inNs, ipBatch, run, sleep, spawnLines } from './sh.js';

/**
 * kill: the agent SIGKILLed; uplink: its public interface down; forwarding: ip_forward off;
 * forward-drop: `iptables -I FORWARD -j DROP` (squat/kilo#489: up, reachable, handshaking, and
 * forwarding nothing — only its followers' probes through it can tell).
 */
export type Fault = 'kill' | 'uplink' | 'forwarding' | 'forward-drop';
export const faults: readonly Fault[] = ['kill', 'uplink', 'forwarding', 'forward-drop'];

export interface Outage {
  fault: Fault;
  oldLeader: string;
  newLeader: string | null;
  /** Pings lost after the fault × 100 ms. */
  outageMs: number;
  /** False when replies had not come back when the run gave up. */
  recovered: boolean;
}

/** The holder of a location's Lease, read from the lab's API server (null: none or not held). */
export function leaseHolder(lab: Lab, location: number, namespace = 'kube-system'): Promise<string | null> {
  const path = `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${leaseName(locationName(location))}`;
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: lab.state.path('api.sock'), path, agent: false, timeout: 10_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        if (res.statusCode === 404) return resolve(null);
        const l = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { spec?: { holderIdentity?: string } };
        resolve(l.spec?.holderIdentity || null);
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * Who leads a location as its agents planned it: a member whose kilo0 is up and routes (followers
 * bring theirs down). `besides`: a node to leave out (a killed agent leaves its kilo0 up).
 */
export function plannedLeader(lab: Lab, location: number, besides?: string): string | null {
  for (const n of lab.nodes.filter((x) => x.location === location && x.name !== besides)) {
    const out = run(['ip', '-n', n.ns, '-o', 'link', 'show', 'kilo0'], { allowFail: true });
    if (!/[<,]UP[,>]/.test(out)) continue;
    if (run(['ip', '-n', n.ns, 'route', 'show', 'dev', 'kilo0'], { allowFail: true }).trim()) return n.name;
  }
  return null;
}

/** Breaks a node the way `fault` says. */
export async function inject(lab: Lab, node: string, fault: Fault): Promise<void> {
  const n = lab.node(node);
  if (fault === 'kill') await lab.stopAgent(node, 'SIGKILL');
  else if (fault === 'uplink') ipBatch(n.ns, ['link set pub0 down']);
  else if (fault === 'forward-drop') run(['ip', 'netns', 'exec', n.ns, 'iptables', '-I', 'FORWARD', '-j', 'DROP']);
  else run(['ip', 'netns', 'exec', n.ns, 'sysctl', '-q', '-w', 'net.ipv4.ip_forward=0']);
}

/** Undoes `inject`: the agent restarted, the uplink and its default route back, forwarding on. */
export function repair(lab: Lab, node: string, fault: Fault): void {
  const n = lab.node(node);
  if (fault === 'kill') lab.startAgent(node);
  else if (fault === 'uplink') ipBatch(n.ns, ['link set pub0 up', `route replace default via 198.18.${n.site}.254`]);
  else if (fault === 'forward-drop') run(['ip', 'netns', 'exec', n.ns, 'iptables', '-D', 'FORWARD', '-j', 'DROP']);
  else run(['ip', 'netns', 'exec', n.ns, 'sysctl', '-q', '-w', 'net.ipv4.ip_forward=1']);
}

/**
 * Pings `dst` from namespace `ns` every 100 ms until stopped; returns the sequence numbers
 * answered, with when the process was asked to stop.
 */
export function pinger(ns: string, dst: string): { stop(): Promise<number[]>; replies(): number } {
  const argv = inNs(ns, ['ping', '-n', '-i', '0.1', '-W', '1', dst]);
  const seqs: number[] = [];
  const child = spawnLines(argv, (l) => {
    const m = /bytes from .* icmp_seq=(\d+)/.exec(l);
    if (m) seqs.push(Number(m[1]));
  });
  return {
    replies: () => seqs.length,
    stop: () =>
      new Promise((resolve) => {
        child.once('close', () => resolve(seqs));
        child.kill('SIGINT');
      }),
  };
}

export interface MeasureOptions {
  /** The location whose leader is broken (its pods are pinged) and the one pinging. */
  victim: number;
  from: number;
  /** Gives up waiting for replies to come back after this long. */
  timeoutMs: number;
  /** Replies in a row that count as recovered. */
  stableReplies?: number;
}

/**
 * One run: find the victim location's leader, ping a pod on one of its followers from a pod of
 * the other location, break the leader, wait for the pings to come back, repair. The outage is
 * the number of pings lost after the fault × 100 ms.
 */
export async function measureFailover(lab: Lab, fault: Fault, o: MeasureOptions): Promise<Outage> {
  const oldLeader = plannedLeader(lab, o.victim);
  if (!oldLeader) throw new Error(`location ${o.victim} has no leader with kilo0 up`);
  const target = lab.nodes.find((n) => n.location === o.victim && n.name !== oldLeader)!;
  const source = lab.nodes.find((n) => n.location === o.from)!;
  const p = pinger(source.podNs, target.podIP);
  const stable = o.stableReplies ?? 30;
  let recovered = false;
  let seqs: number[] = [];
  try {
    // A baseline: the path works before the fault.
    const t0 = Date.now();
    while (p.replies() < 10) {
      if (Date.now() - t0 > 30_000) throw new Error(`no replies from ${target.podIP} before the fault`);
      await sleep(100);
    }
    await inject(lab, oldLeader, fault);
    const faultAt = Date.now();
    // Recovered: another node leads and `stable` replies came since it was seen leading.
    let since: number | null = null;
    for (;;) {
      await sleep(500);
      if (since === null && plannedLeader(lab, o.victim, oldLeader)) since = p.replies();
      if (since !== null && p.replies() - since >= stable) {
        recovered = true;
        break;
      }
      if (Date.now() - faultAt > o.timeoutMs) break;
    }
  } finally {
    seqs = await p.stop();
  }
  // The fault came after the baseline's 10th reply; what went unanswered after it is the outage.
  const start = seqs[9] ?? 0;
  const last = seqs[seqs.length - 1] ?? start;
  const answered = new Set(seqs.filter((s) => s > start));
  let lost = 0;
  for (let s = start + 1; s <= last; s++) if (!answered.has(s)) lost++;
  // Pings after the last answered one were lost too when it never recovered.
  if (!recovered) lost = Math.max(lost, Math.round(o.timeoutMs / 100) - answered.size);
  const newLeader = plannedLeader(lab, o.victim, oldLeader);
  return { fault, oldLeader, newLeader, outageMs: lost * 100, recovered };
}

/** p50 and max of figures, for the report. */
export function summary(xs: readonly number[]): { p50: number; max: number } {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: s[Math.floor((s.length - 1) / 2)] ?? NaN, max: s[s.length - 1] ?? NaN };
}
