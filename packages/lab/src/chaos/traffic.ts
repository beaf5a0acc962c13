import type { ChildProcess } from 'node:child_process';
import { inNs, spawnLines } from '../sh.js';
import type { Pair } from '../probe.js';

/** One ping's outcome: when it was due (ms since the epoch) and whether a reply came. */
export interface Sample {
  at: number;
  ok: boolean;
}

/**
 * Starts `argv`, a `ping -D -O` (line-buffered), and appends each sequence number's outcome to
 * `samples`, by ping's own clock.
 */
export function spawnPing(argv: readonly string[], samples: Sample[]): ChildProcess {
  return spawnLines(argv, (line) => {
    const m = /^\[(\d+\.\d+)\] (?:(\d+) bytes from|no answer yet)/.exec(line);
    if (m) samples.push({ at: Math.round(Number(m[1]) * 1000), ok: m[2] !== undefined });
  });
}

/** Pings every 0.5 s. */
export const pingIntervalMs = 500;

/**
 * Continuous pings between every pair, counted: one `ping -O -D` per pair, whose lines say for
 * each sequence number whether the reply came ("no answer yet" otherwise). A ping that exits
 * (no route yet, its namespace gone) is started again while the pair is wanted.
 */
export class Traffic {
  private readonly running = new Map<string, { pair: Pair; child: ChildProcess | null }>();
  readonly samples = new Map<string, Sample[]>();
  private stopped = false;

  static key(p: Pair): string {
    return `${p.s.name}→${p.d.name}`;
  }

  /** Runs exactly these pairs: starts the new ones, stops those no longer wanted. */
  set(pairs: readonly Pair[]): void {
    const wanted = new Map(pairs.map((p) => [Traffic.key(p), p]));
    for (const [k, r] of this.running) {
      const p = wanted.get(k);
      if (!p || p.s.ns !== r.pair.s.ns || p.d.ip !== r.pair.d.ip) {
        this.running.delete(k);
        r.child?.kill('SIGKILL');
      }
    }
    for (const [k, p] of wanted) if (!this.running.has(k)) this.start(k, p);
  }

  pairs(): string[] {
    return [...this.running.keys()];
  }

  private start(k: string, pair: Pair): void {
    const entry: { pair: Pair; child: ChildProcess | null } = { pair, child: null };
    this.running.set(k, entry);
    const list = this.samples.get(k) ?? [];
    this.samples.set(k, list);
    const launch = (): void => {
      if (this.stopped || this.running.get(k) !== entry) return;
      // ping writes to a pipe in 4 KiB blocks: line by line, or replies show up seconds late.
      const argv = inNs(pair.s.ns, [
        'stdbuf',
        '-oL',
        'ping',
        '-n',
        '-D',
        '-O',
        '-i',
        String(pingIntervalMs / 1000),
        '-W',
        '1',
        ...(pair.s.source ? ['-I', pair.s.source] : []),
        pair.d.ip,
      ]);
      const child = spawnPing(argv, list);
      entry.child = child;
      child.on('close', () => {
        entry.child = null;
        // Between two pings' lives nothing is measured: count that time as lost.
        if (!this.stopped && this.running.get(k) === entry) {
          list.push({ at: Date.now(), ok: false });
          setTimeout(launch, pingIntervalMs);
        }
      });
    };
    launch();
  }

  stop(): void {
    this.stopped = true;
    for (const r of this.running.values()) r.child?.kill('SIGKILL');
    this.running.clear();
  }
}

/** The longest run of lost pings of one pair within [from, to], in ms (lost count × the pings' interval). */
export function longestLoss(
  samples: readonly Sample[],
  from: number,
  to: number,
  intervalMs: number = pingIntervalMs,
): number {
  let run = 0;
  let worst = 0;
  for (const s of samples) {
    if (s.at < from || s.at > to) continue;
    run = s.ok ? 0 : run + 1;
    worst = Math.max(worst, run);
  }
  return worst * intervalMs;
}

/**
 * When every pair had replied again after `since`, by ping's own clock (the runner may read the
 * replies late on a loaded machine): the latest of each pair's first reply, and the pairs
 * without one yet.
 */
export function recoveredAt(traffic: Traffic, since: number): { at: number | null; failing: string[] } {
  let at = since;
  const failing: string[] = [];
  for (const k of traffic.pairs()) {
    const first = (traffic.samples.get(k) ?? []).find((x) => x.ok && x.at > since);
    if (first) at = Math.max(at, first.at);
    else failing.push(k);
  }
  return { at: failing.length === 0 ? at : null, failing };
}
