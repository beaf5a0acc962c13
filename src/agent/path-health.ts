import type { Topology } from '../mesh/topology.js';
import type { KiloNode } from '../model/types.js';
import type { WireGuardState } from '../wireguard/state.js';
import { lanMistakes, type LanMesh, type LanMistake } from './health-lan.js';
import type { Prober } from './health-prober.js';
import {
  emptySummary,
  formatPathHealth,
  handshakeRecentSeconds,
  maxListed,
  parsePathHealth,
  pathStateKey,
  type FailingPath,
  type PathHealthSummary,
} from './health-summary.js';
import { pairKey, pathTargets, type PathTarget } from './health-targets.js';
import { directAddresses, directPathSeconds, handshakeProvesPath } from './relay-detect.js';

/** A device read older than this is dated in a failing pair's reason (a round is 2 s; a full pass may be 30 s away). */
const staleReadSeconds = 5;

/**
 * A failing WireGuard pair's handshake as its reason says it: `at`, the peer's latest handshake as
 * read at `readAt` (Unix seconds; 0: never). Handshakes are read at full passes only (at scale
 * every peer at once), so a reason from an old read dates it: "no handshake yet" from a read half
 * a minute old is not the state now.
 */
export function handshakeSaid(at: number, now: number, readAt: number): string {
  if (readAt === 0) return 'its handshake not read yet';
  const age = now - readAt;
  const read = age > staleReadSeconds ? ` as of a read ${age} s ago` : '';
  return at === 0 ? `no handshake yet${read}` : `last handshake ${now - at} s ago${read}`;
}

/** What the figures are told (health-metrics.ts over prom-client; nothing in tests). */
export interface PathObserver {
  probed(path: PathTarget['path'], ok: boolean): void;
  judged(s: PathHealthSummary): void;
}

export interface PathHealthOptions {
  prober: Prober;
  /** The agent's flags that decide how mates are reached (health-lan.ts). */
  mesh: Omit<LanMesh, 'granularity'>;
  log: { warn(o: object, m: string): void; info(o: object, m: string): void };
  observer?: PathObserver;
  /** A pair changed state: the summary on the Node is due (the agent publishes it). */
  onChange?: () => void;
  clock?: () => number;
  /** A round every this often (default 2 s). */
  intervalMs?: number;
  /** Echo requests per round at most (default 4): the cost per node, whatever the cluster's size. */
  perRound?: number;
  /** Unanswered probes in a row before a pair counts as failing (default 3). */
  failures?: number;
}

interface PairState {
  /** Unanswered probes in a row; 0 after an answer. */
  fails: number;
  /** null: not probed yet. */
  ok: boolean | null;
  /** The last topology that planned the pair (PathHealth.generation): older ones are forgotten. */
  planned: number;
}

/** A target as planned, with its pair's state (the one in `pairs`). */
interface Planned extends PathTarget {
  readonly state: PairState;
}

/**
 * Per-pair health on one node: the paths it is responsible for (health-targets.ts) are pinged in
 * rounds of at most `perRound` probes: the pairs under suspicion first (up to half the round), the
 * rest round-robin. So a node sends at most perRound / interval echo requests a second (2 by
 * default) at any cluster size; with 5,000 WireGuard peers each is probed about every 40 minutes,
 * a suspect one every round, and every peer's latest handshake is read from the device at each
 * full pass at no cost. A location whose mates are on different LANs (health-lan.ts) fails its
 * pairs at once, from published data, with the reason and a warning in the log, once.
 */
export class PathHealth {
  private topology: Topology | null = null;
  private targets: Planned[] = [];
  /** The targets a probe can judge (an address, no location mistake), in round-robin order. */
  private probeable: Planned[] = [];
  /** Pairs with an unanswered probe, by pairKey: probed first, every round. */
  private readonly suspects = new Map<string, Planned>();
  /**
   * The pairs' states by path and node: a pair's key is a new string per topology, made and hashed
   * again for each of 19,000 targets at 20,000 nodes; the node's name is the parsed one, hashed once.
   */
  private readonly pairs: Record<PathTarget['path'], Map<string, PairState>> = {
    private: new Map(),
    wireguard: new Map(),
  };
  /** Topologies planned so far: a pair's `planned` says which last had it. */
  private generation = 0;
  private lan = new Map<string, LanMistake>();
  private lanWarned = new Set<string>();
  private handshakes: PathHealthSummary['handshakes'] = { recent: 0, stale: 0, never: 0 };
  private latest = new Map<string, number>();
  /** When `latest` was read from the device (Unix seconds; 0: never): a reason says its age if old. */
  private readAt = 0;
  private cursor = 0;
  private timer: NodeJS.Timeout | null = null;
  /** A failing pair's handshake stops vetoing then (unreachablePeers). */
  private recheck: NodeJS.Timeout | null = null;
  private running = false;
  private summaryCache: PathHealthSummary | null = null;
  /** The failing pairs as last judged (pathStateKey); at start, none fail. */
  private lastKey = pathStateKey(emptySummary);

  constructor(private readonly o: PathHealthOptions) {}

  start(): void {
    this.timer ??= setInterval(() => void this.round(), this.o.intervalMs ?? 2000);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.recheck) clearTimeout(this.recheck);
    this.recheck = null;
  }

  /**
   * A pass's topology (and its read of the WireGuard device, on the passes that read it): the
   * targets follow the plan; pairs no longer planned are forgotten.
   */
  planned(t: Topology, device: WireGuardState | null): void {
    // The agent hands the same topology again when nothing but check-ins came (agent.ts planned()).
    if (t === this.topology) {
      if (device) {
        this.readHandshakes(device);
        this.judge();
      }
      return;
    }
    this.topology = t;
    // At 20,000 nodes a join's topology has 19,000 targets, nearly all as before: each pair's state
    // is found once and kept on its target; only when pairs are gone does a sweep look for them.
    const generation = ++this.generation;
    // A pair relayed elsewhere is probed at its WireGuard IP, the direct entry's (relay-detect.ts).
    const direct = directAddresses(t);
    let planned = 0;
    this.targets = pathTargets(t).map((p) => {
      const pairs = this.pairs[p.path];
      let state = pairs.get(p.node);
      if (!state) pairs.set(p.node, (state = { fails: 0, ok: null, planned: 0 }));
      if (state.planned !== generation) planned++;
      state.planned = generation;
      const address = (p.path === 'wireguard' ? direct.get(p.node) : undefined) ?? p.address;
      return { node: p.node, path: p.path, address, key: p.key, state };
    });
    if (this.pairs.private.size + this.pairs.wireguard.size > planned)
      for (const pairs of Object.values(this.pairs))
        for (const [node, s] of pairs) if (s.planned !== generation) pairs.delete(node);
    // Only the local node's mistakes count (`only`), among its location's nodes: the others are skipped.
    const location = t.local.node.location;
    const nodes: KiloNode[] = [];
    for (const s of t.segments) for (const n of s.nodes) if (n.location === location) nodes.push(n);
    // Unlimited: a node's own mistakes are at most its mates, whom it has as targets anyway.
    const own = lanMistakes(
      nodes,
      { ...this.o.mesh, granularity: t.granularity },
      { only: t.local.node.name },
    ).mistakes;
    this.lan = new Map(own.map((m) => [m.node === t.local.node.name ? m.mate : m.node, m]));
    const reasons = new Set(own.map((m) => m.reason));
    for (const r of reasons)
      if (!this.lanWarned.has(r)) this.o.log.warn({ location: t.local.node.location }, `location mistake: ${r}`);
    // Forgotten once fixed, so that the same mistake made again is said again.
    this.lanWarned = reasons;
    this.probeable = this.targets.filter((p) => p.address !== '' && !this.lan.has(p.node));
    this.suspects.clear();
    for (const p of this.probeable) if (p.state.fails > 0) this.suspects.set(pairKey(p), p);
    if (device) this.readHandshakes(device);
    this.judge();
  }

  /** One round of probes (the timer's; tests call it). */
  async round(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      const picked = this.pick();
      const results = await Promise.all(picked.map((p) => this.o.prober.probe(p.address)));
      let changed = false;
      picked.forEach((p, i) => {
        const key = pairKey(p);
        // Not p.state: a pass during the probes may have planned the pair away.
        const s = this.pairs[p.path].get(p.node);
        if (!s) return;
        const ok = results[i]!;
        this.o.observer?.probed(p.path, ok);
        s.fails = ok ? 0 : s.fails + 1;
        if (ok) this.suspects.delete(key);
        else this.suspects.set(key, p);
        const before = s.ok;
        s.ok = ok ? true : s.fails >= (this.o.failures ?? 3) ? false : s.ok;
        changed ||= s.ok !== before;
      });
      // A round that changed no pair's state costs no pass over the targets (5,000 at scale).
      if (changed) this.judge();
    } finally {
      this.running = false;
    }
  }

  summary(): PathHealthSummary {
    return (this.summaryCache ??= this.summarise());
  }

  /** The nodes this one cannot reach directly (failing private or WireGuard pairs): what a relay needs. */
  unreachable(): string[] {
    return [...new Set(this.failingPaths().map((f) => f.node))];
  }

  /**
   * The WireGuard peers this node cannot reach directly, for kilo.squat.ai/unreachable: a failing
   * WireGuard pair (its probes unanswered) whose latest handshake does not prove the path either
   * (relay-detect.ts). `published`: what the Node says now, kept for pairs not probed yet.
   */
  unreachablePeers(published: readonly string[] = []): string[] {
    const now = Math.floor((this.o.clock ?? Date.now)() / 1000);
    const out: string[] = [];
    let due = Infinity;
    // The first pass publishes before it plans: nothing is judged yet.
    if (this.topology === null) return [...published];
    const listed = new Set(published);
    for (const p of this.targets) {
      if (p.path !== 'wireguard') continue;
      const ok = p.state.ok;
      // Not judged yet (a restarted agent): as published, so a relayed pair does not go direct
      // for the few seconds until its probes fail again (both ends restarting at once).
      if (ok === null && listed.has(p.node)) {
        out.push(p.node);
        // Probed first, so that the pair is judged within rounds, not a round-robin sweep.
        if (p.address !== '') this.suspects.set(pairKey(p), p);
      }
      if (ok !== false) continue;
      const at = p.key ? (this.latest.get(p.key) ?? 0) : 0;
      if (!handshakeProvesPath(at, now)) out.push(p.node);
      else due = Math.min(due, at + directPathSeconds + 1);
    }
    // A failing pair whose handshake still vetoes becomes unreachable as the handshake ages, with
    // no probe changing state: without a nudge it would wait for the next check-in (30 s).
    if (due !== Infinity) this.recheckAt(due - now);
    return out;
  }

  /** Calls onChange (the agent publishes, asking unreachablePeers again) in `seconds`; one pending at most. */
  private recheckAt(seconds: number): void {
    if (this.recheck || !this.o.onChange) return;
    this.recheck = setTimeout(
      () => {
        this.recheck = null;
        this.o.onChange?.();
      },
      Math.max(seconds, 0) * 1000,
    );
    this.recheck.unref();
  }

  /** Why /health says degraded, or null. */
  degraded(): string | null {
    const s = this.summary();
    if (s.pairs.failing === 0) return null;
    const total = s.pairs.ok + s.pairs.failing + s.pairs.unknown;
    const shown = s.failing
      .slice(0, 3)
      .map((f) => `${f.node} (${f.path}): ${f.reason}`)
      .join('; ');
    const more = s.pairs.failing > 3 ? `; and ${s.pairs.failing - 3} more` : '';
    return `${s.pairs.failing} of ${total} planned paths down: ${shown}${more}`;
  }

  /**
   * kilo.squat.ai/path-health to publish, given what the Node has: `urgent` when a pair's state
   * differs from it (publish now); otherwise only the handshakes moved, which ride along with the
   * next check-in's patch rather than cost one of their own.
   */
  publishable(current: string | undefined): { value: string; urgent: boolean } {
    const value = formatPathHealth(this.summary());
    // Compared as both read back: the value bounds reasons, so the summary itself may differ from it.
    return { value, urgent: pathStateKey(parsePathHealth(current)) !== pathStateKey(parsePathHealth(value)) };
  }

  private pick(): Planned[] {
    const budget = this.o.perRound ?? 4;
    const probeable = this.probeable;
    const out = [...this.suspects.values()].slice(0, budget >> 1);
    const taken = new Set(out.map(pairKey));
    const start = this.cursor;
    for (let i = 0; i < probeable.length && out.length < budget; i++) {
      const p = probeable[(start + i) % probeable.length]!;
      if (taken.has(pairKey(p))) continue;
      out.push(p);
      taken.add(pairKey(p));
      this.cursor = (start + i + 1) % probeable.length;
    }
    return out;
  }

  private readHandshakes(device: WireGuardState): void {
    const now = Math.floor((this.o.clock ?? Date.now)() / 1000);
    const h = { recent: 0, stale: 0, never: 0 };
    this.latest = new Map();
    this.readAt = now;
    for (const p of device.peers) {
      this.latest.set(p.publicKey, p.latestHandshake);
      if (p.latestHandshake === 0) h.never++;
      else if (now - p.latestHandshake <= handshakeRecentSeconds) h.recent++;
      else h.stale++;
    }
    this.handshakes = h;
  }

  private failingPaths(): FailingPath[] {
    const out: FailingPath[] = [];
    for (const p of this.targets) {
      const lan = this.lan.get(p.node);
      if (lan && p.path === 'private') out.push({ node: p.node, path: p.path, reason: lan.reason });
      else if (p.state.ok === false) out.push({ node: p.node, path: p.path, reason: this.why(p) });
    }
    return out.sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : a.path < b.path ? -1 : 1));
  }

  private why(p: Planned): string {
    const fails = p.state.fails;
    if (p.path === 'private')
      return `${p.node}'s pods (${p.address}) do not answer in the clear over the private network (${fails} probes in a row)`;
    const at = p.key ? (this.latest.get(p.key) ?? 0) : 0;
    const now = Math.floor((this.o.clock ?? Date.now)() / 1000);
    const hs = handshakeSaid(at, now, this.readAt);
    return `${p.node}'s pods (${p.address}) do not answer through WireGuard (${fails} probes in a row; ${hs})`;
  }

  private summarise(): PathHealthSummary {
    const failing = this.failingPaths();
    let ok = 0;
    let unknown = 0;
    for (const p of this.targets) {
      const s = p.state;
      if (this.lan.has(p.node) && p.path === 'private') continue;
      if (s.ok === true) ok++;
      else if (s.ok !== false) unknown++;
    }
    return {
      pairs: { ok, failing: failing.length, unknown },
      handshakes: this.handshakes,
      failing: failing.slice(0, maxListed),
      more: Math.max(0, failing.length - maxListed),
    };
  }

  private judge(): void {
    this.summaryCache = null;
    const s = this.summary();
    this.o.observer?.judged(s);
    const key = pathStateKey(s);
    if (key === this.lastKey) return;
    this.lastKey = key;
    this.o.log.info(
      { failing: s.pairs.failing, pairs: s.failing.map((f) => `${f.node} (${f.path})`) },
      s.pairs.failing > 0 ? 'planned paths down' : 'every planned path that was down works again',
    );
    this.o.onChange?.();
  }
}
