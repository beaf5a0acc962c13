/**
 * The chaos run's faults (pure): what each does is in faults.ts; here their names, how long the
 * mesh may take to recover from each (the convergence window, after which every pair must reach
 * every pair again), and a seeded random schedule, so a failing run can be replayed.
 */
export const faultKinds = [
  'agent-kill',
  'agent-term-clean-up',
  'apiserver-restart',
  'apiserver-away',
  'node-rejoin',
  'peer-readd',
  'uplink-flap',
  'route-deleted',
  'iptables-rule-deleted',
  'granularity-switch',
  'annotation-burst',
] as const;
export type FaultKind = (typeof faultKinds)[number];

/** Seconds after a fault ends within which every pair must be reachable again. */
export const convergenceWindow: Record<FaultKind, number> = {
  // --clean-up=false: the dataplane stays, the new agent adopts it.
  'agent-kill': 10,
  // The agent removes everything on SIGTERM; the new one rebuilds it and handshakes again.
  'agent-term-clean-up': 30,
  'apiserver-restart': 15,
  'apiserver-away': 15,
  // A new agent on a loaded machine, its first handshakes, the others' plans and the Peer's config.
  'node-rejoin': 60,
  'peer-readd': 30,
  // WireGuard retries a handshake every 5 s; keepalives behind NAT refresh the mapping.
  'uplink-flap': 30,
  // ip monitor reports the deletion within milliseconds.
  'route-deleted': 10,
  // iptables has no monitor: repaired at the next full pass (the resync period, 30 s).
  'iptables-rule-deleted': 45,
  'granularity-switch': 60,
  'annotation-burst': 15,
};

export interface ScheduledFault {
  kind: FaultKind;
  /** Which node or location it hits, chosen by the schedule (an index the runner maps). */
  target: number;
}

/** A small seeded generator (mulberry32): the same seed gives the same schedule. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * An endless schedule: every kind once in a shuffled round, then another round, so a short run
 * still sees every kind and a long one sees each about equally often.
 */
export function* schedule(seed: number, kinds: readonly FaultKind[] = faultKinds): Generator<ScheduledFault> {
  const next = random(seed);
  for (;;) {
    const round = [...kinds];
    for (let i = round.length - 1; i > 0; i--) {
      const j = Math.floor(next() * (i + 1));
      [round[i], round[j]] = [round[j]!, round[i]!];
    }
    for (const kind of round) yield { kind, target: Math.floor(next() * 1_000_000) };
  }
}
