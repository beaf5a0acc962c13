import { join } from 'node:path';
import type { ReadinessMemory } from '../../../../src/model/ready.js';
import { Lab } from '../lab.js';
import { peerEndpoint } from '../peer.js';
import { allPairs, type Pair } from '../probe.js';
import { sleep } from '../sh.js';
import { perform } from './faults.js';
import { dataplaneState, desiredPlans, footprint, staleItems, type Footprint } from './invariants.js';
import { faultTable, type FaultRecord } from './report.js';
import { convergenceWindow, faultKinds, schedule, type FaultKind } from './schedule.js';
import { longestLoss, recoveredAt, Traffic } from './traffic.js';

export interface ChaosOptions {
  minutes: number;
  seed: number;
  stateDir: string;
  prefix: string;
  apiAwaySeconds: number;
  kinds?: readonly FaultKind[];
  /** Stop after this many faults even if time is left. */
  maxFaults?: number;
  log: (line: string) => void;
}

export interface ChaosResult {
  records: FaultRecord[];
  /** Violations not tied to one fault: stale state in quiet time, leaks. */
  other: { kind: string; violations: string[] }[];
  table: string;
  pings: { sent: number; lost: number };
  footprints: Map<string, Footprint[]>;
}

/**
 * The chaos run: the issue's lab (3 locations × 2 nodes, location 3 behind NAT, a Peer), pings
 * between every pair all along, faults one after another from a seeded schedule, and the
 * invariants checked every second (see docs/chaos.md).
 */
export async function runChaos(o: ChaosOptions): Promise<ChaosResult> {
  const lab = await Lab.up(
    o.stateDir,
    { locations: 3, nodesPerLocation: 2, granularity: 'cross', natLocation: 3, peer: true, prefix: o.prefix },
    o.log,
  );
  const traffic = new Traffic();
  const records: FaultRecord[] = [];
  const staleViolations: string[] = [];
  const leakViolations: string[] = [];
  const footprints = new Map<string, Footprint[]>();
  let stopping = false;
  const background: Promise<void>[] = [];
  try {
    const { ms } = await lab.converge(180_000);
    o.log(`lab converged ${(ms / 1000).toFixed(1)} s after the agents started`);
    const pairs = (): Pair[] => {
      const pods = lab.podEndpoints();
      return allPairs([...pods, peerEndpoint(lab)], pods);
    };
    traffic.set(pairs());
    let current: { kind: FaultKind; quietFrom: number } | null = null;
    const quiet = () => !current || Date.now() > current.quietFrom;

    // The Peer's owner re-runs kgctl showconf now and then (as converge() does).
    background.push(
      (async () => {
        while (!stopping) {
          await lab.refreshPeer().catch(() => undefined);
          await sleep(5000);
        }
      })(),
    );
    // Stale state: every second, every node's Kilo state against its current plan. An item
    // stale for more than 5 s in quiet time (no fault, no convergence window open) is a violation.
    const staleSince = new Map<string, number>();
    const reported = new Set<string>();
    let readiness: ReadinessMemory | null = null;
    background.push(
      (async () => {
        while (!stopping) {
          const t0 = Date.now();
          try {
            const desired = desiredPlans(lab, readiness);
            readiness = desired.memory;
            const plans = desired.plans;
            const seen = new Set<string>();
            await Promise.all(
              [...plans].map(async ([node, plan]) => {
                if (!lab.nodes.some((n) => n.name === node)) return;
                for (const item of await staleItems(lab, node, plan)) {
                  const k = `${node} ${item}`;
                  seen.add(k);
                  if (!staleSince.has(k)) staleSince.set(k, Date.now());
                  if (quiet() && Date.now() - staleSince.get(k)! > 5000 && !reported.has(k)) {
                    reported.add(k);
                    staleViolations.push(
                      `${new Date().toISOString()} stale on ${k} (after ${current?.kind ?? 'start'})`,
                    );
                    o.log(`VIOLATION stale: ${k}`);
                  }
                }
              }),
            );
            for (const k of staleSince.keys()) if (!seen.has(k)) staleSince.delete(k);
          } catch (e) {
            o.log(`stale check: ${(e as Error).message}`);
          }
          await sleep(Math.max(0, 1000 - (Date.now() - t0)));
        }
      })(),
    );
    // Footprints every 10 s.
    background.push(
      (async () => {
        while (!stopping) {
          for (const n of lab.nodes) {
            const p = lab.agentProcess(n.name);
            const f = p ? footprint(p.pid) : null;
            if (!p || !f) continue;
            const key = `${n.name} pid ${p.pid}`;
            const list = footprints.get(key) ?? [];
            footprints.set(key, list);
            list.push(f);
          }
          await sleep(10_000);
        }
      })(),
    );

    const end = Date.now() + o.minutes * 60_000;
    for (const f of schedule(o.seed, o.kinds ?? faultKinds)) {
      if (Date.now() > end || records.length >= (o.maxFaults ?? Infinity)) break;
      const start = Date.now();
      const window = convergenceWindow[f.kind];
      current = { kind: f.kind, quietFrom: Number.POSITIVE_INFINITY };
      const violations: string[] = [];
      let baseline: Map<string, string[]> | null = null;
      const whileAway = async (): Promise<void> => {
        const now = new Map<string, string[]>();
        for (const [name, lines] of await Promise.all(
          lab.nodes.map(async (n) => [n.name, await dataplaneState(lab, n.name)] as const),
        ))
          if (lines) now.set(name, lines);
        if (!baseline) {
          baseline = now;
          return;
        }
        for (const [node, lines] of now) {
          const before = baseline.get(node);
          if (!before) {
            baseline.set(node, lines);
            continue;
          }
          const added = lines.filter((l) => !before.includes(l));
          const removed = before.filter((l) => !lines.includes(l));
          if (added.length + removed.length > 0) {
            const v = `${node}: dataplane changed while the API server was away: ${[...added.map((l) => `+${l}`), ...removed.map((l) => `-${l}`)].slice(0, 3).join('; ')}`;
            violations.push(v);
            o.log(`VIOLATION ${v}`);
            baseline.set(node, lines);
          }
        }
      };
      let what: string;
      let repaired: (() => Promise<boolean>) | undefined;
      try {
        ({ what, repaired } = await perform(f, {
          lab,
          apiAwaySeconds: o.apiAwaySeconds,
          whileAway,
          membershipChanged: () => traffic.set(pairs()),
        }));
      } catch (e) {
        what = `failed: ${(e as Error).message.slice(0, 200)}`;
        violations.push(`the fault itself failed: ${(e as Error).message.slice(0, 200)}`);
      }
      traffic.set(pairs());
      const over = Date.now();
      // Wait for a reply on every pair by ping's clock, allowing the window plus 20 s for replies
      // read late, and for what the fault deleted to be back (pings may not need it, the next
      // fault's baseline does); a recovery later than the window is a violation.
      let r = recoveredAt(traffic, over);
      let repairedAt = repaired ? null : over;
      while ((r.at === null || repairedAt === null) && Date.now() < over + (window + 20) * 1000) {
        await sleep(250);
        r = recoveredAt(traffic, over);
        if (repairedAt === null && (await repaired!().catch(() => false))) repairedAt = Date.now();
      }
      const recovered = r.at === null || repairedAt === null ? null : Math.max(r.at, repairedAt);
      if (recovered === null || recovered > over + window * 1000) {
        const v =
          recovered === null
            ? repairedAt === null
              ? `what the fault deleted was not back ${window + 20} s after it`
              : `not every pair reachable ${window} s after the fault: ${r.failing.join(', ')}`
            : `every pair reachable and the deletion repaired only ${((recovered - over) / 1000).toFixed(1)} s after the fault (window ${window} s)`;
        violations.push(v);
        o.log(`VIOLATION ${f.kind}: ${v}`);
      }
      const until = recovered ?? Date.now();
      const outageMs = Math.max(
        0,
        ...traffic.pairs().map((k) => longestLoss(traffic.samples.get(k) ?? [], start, until)),
      );
      current = { kind: f.kind, quietFrom: Date.now() };
      records.push({ kind: f.kind, what, start, end: over, recovered, outageMs, violations });
      o.log(
        `${new Date(start).toISOString()} ${f.kind} (${what}): over after ${((over - start) / 1000).toFixed(1)} s, ` +
          `${recovered ? `every pair back ${((recovered - over) / 1000).toFixed(1)} s later` : 'NOT RECOVERED'}, ` +
          `longest outage ${(outageMs / 1000).toFixed(1)} s${violations.length ? `, ${violations.length} violations` : ''}`,
      );
      // A quiet stretch between faults: stale state and leaks show there.
      await sleep(8000);
    }
  } finally {
    stopping = true;
    traffic.stop();
    await Promise.all(background).catch(() => undefined);
    await lab.down();
  }
  // Leaks: per agent process that lived at least 5 minutes, its last footprint against the one
  // 2 minutes after it started (start-up allocations, caches filled).
  for (const [key, list] of footprints) {
    if (list.length < 30) continue;
    const base = list[12]!;
    const last = list[list.length - 1]!;
    if (last.fds > base.fds + 16) leakViolations.push(`${key}: fds ${base.fds} → ${last.fds}`);
    if (last.children > base.children + 2) leakViolations.push(`${key}: children ${base.children} → ${last.children}`);
    if (last.rssKiB > base.rssKiB + 50 * 1024) leakViolations.push(`${key}: RSS ${base.rssKiB} → ${last.rssKiB} KiB`);
  }
  let sent = 0;
  let lost = 0;
  for (const list of traffic.samples.values()) {
    sent += list.length;
    lost += list.filter((s) => !s.ok).length;
  }
  const other = [
    { kind: 'stale state (quiet time)', violations: staleViolations },
    { kind: 'leaks (RSS, fds, children)', violations: leakViolations },
  ];
  return {
    records,
    other,
    table: faultTable(
      records,
      other.map((x) => ({ kind: x.kind, violations: x.violations.length })),
    ),
    pings: { sent, lost },
    footprints,
  };
}

export const defaultChaosDir = (id: string) => join('/tmp', `kilo-chaos-${id}`);
