import type { ChildProcess } from 'node:child_process';
import { readFile, readdir, readlink } from 'node:fs/promises';
import type { Exec } from './exec.js';
import { parseMonitorLine, type MonitorFilter, type RoutingEvent } from './monitor-line.js';

export { parseMonitorLine, type MonitorFilter, type RoutingEvent } from './monitor-line.js';

/**
 * Watches the kernel for changes to Kilo's routes (by protocol), rules (by priority) and interfaces
 * (by name) made by anyone, so the agent can trust what it last wrote between full reads.
 *
 * Events are trustworthy only between a `ready` and the next `lost`: the agent reads everything
 * after each `ready`. Two kernel behaviours the consumer must know: the IPv4 routes through an
 * interface that goes down or loses its last IPv4 address are flushed without a notification (the
 * `link` or `address` event is the only sign), and a rule whose selectors are all "all" does not
 * tell its family (`family: null`).
 */
export interface RoutingMonitor {
  /** The running `ip monitor`'s PID; undefined while it is being restarted and after stop(). */
  readonly pid: number | undefined;
  /** Ends the monitor: kills the process it started, waits for it to exit; no restart follows. */
  stop(): Promise<void>;
}

export interface MonitorOptions extends MonitorFilter {
  /** First delay before restarting an exited `ip monitor`; doubles per failure up to `maxRestartDelayMs`. */
  restartDelayMs?: number;
  maxRestartDelayMs?: number;
  /** The netlink socket's receive buffer asked for (`ip -rcvbuf`); the kernel caps it at net.core.rmem_max. */
  receiveBufferBytes?: number;
}

/**
 * `-N`: tables and protocols as numbers, whatever names /etc/iproute2 gives them (as the routes
 * code reads them). `-o`: one line per event, so a line is an event. `-rcvbuf`: a burst (a big
 * route batch) queues in the socket while the agent is busy; what overflows is reported as `lost`.
 */
export function monitorArgv(receiveBufferBytes = 16 * 1024 * 1024): string[] {
  return ['ip', '-N', '-o', '-rcvbuf', String(receiveBufferBytes), 'monitor', 'route', 'rule', 'link', 'address'];
}

// A process that stayed up this long was healthy: the next failure starts the backoff afresh.
const healthyAfterMs = 10_000;
const readyPollMs = 5;
// Past this the /proc check is given up (no procfs, or not readable) and the monitor is assumed live.
const readyTimeoutMs = 3_000;
const killGraceMs = 2_000;

export function startRoutingMonitor(
  exec: Exec,
  opts: MonitorOptions,
  onEvent: (e: RoutingEvent) => void,
): RoutingMonitor {
  const filter: MonitorFilter = { protocol: opts.protocol, priority: opts.priority, interfaces: [...opts.interfaces] };
  const firstDelay = opts.restartDelayMs ?? 200;
  const maxDelay = opts.maxRestartDelayMs ?? 10_000;
  const argv = monitorArgv(opts.receiveBufferBytes);
  let delay = firstDelay;
  let stopped = false;
  let current: { child: ChildProcess; exited: Promise<void>; alive: boolean } | null = null;
  let restartTimer: NodeJS.Timeout | null = null;
  // 'lost' is said once per blind spell: from the first failure until the next 'ready'.
  let lostSaid = false;

  const lost = (reason: string): void => {
    if (lostSaid) return;
    lostSaid = true;
    onEvent({ kind: 'lost', reason });
  };
  const ready = (): void => {
    lostSaid = false;
    onEvent({ kind: 'ready' });
  };

  const scheduleRestart = (startedAt: number): void => {
    if (Date.now() - startedAt >= healthyAfterMs) delay = firstDelay;
    restartTimer = setTimeout(spawnOne, delay);
    delay = Math.min(delay * 2, maxDelay);
  };

  const spawnOne = (): void => {
    restartTimer = null;
    if (stopped) return;
    const startedAt = Date.now();
    let child: ChildProcess;
    try {
      child = exec.start(argv);
    } catch (err) {
      lost(`ip monitor could not be started: ${err instanceof Error ? err.message : String(err)}`);
      scheduleRestart(startedAt);
      return;
    }
    let resolveExit!: () => void;
    const entry = { child, exited: new Promise<void>((r) => (resolveExit = r)), alive: true };
    current = entry;
    let lastError = '';
    const stdoutLines = lineSplitter((line) => {
      const e = parseMonitorLine(line, filter);
      if (e) onEvent(e);
    });

    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (chunk: string) => {
      if (!stopped) stdoutLines.push(chunk);
    });
    child.stderr?.setEncoding('utf8');
    const stderrLines = lineSplitter((line) => {
      if (line.trim()) lastError = line.trim().slice(0, 300);
      // iproute2 reports a full socket buffer and carries on: events were dropped, the watch goes on.
      if (/No buffer space available/.test(line) && !stopped && current === entry) {
        lost(`ip monitor: ${line.trim()}`);
        ready();
      }
    });
    child.stderr?.on('data', (chunk: string) => stderrLines.push(chunk));

    let ended = false;
    const onEnd = (why: string): void => {
      if (ended) return;
      ended = true;
      entry.alive = false;
      resolveExit();
      if (stopped || current !== entry) return;
      current = null;
      lost(`ip monitor ${why}${lastError ? `: ${lastError}` : ''}`);
      scheduleRestart(startedAt);
    };
    child.on('error', (err) => onEnd(`could not run: ${err.message}`));
    child.on('close', (code, signal) => onEnd(signal ? `was killed by ${signal}` : `exited with ${code}`));

    void waitSubscribed(entry, () => !stopped && current === entry && entry.alive).then((ok) => {
      if (ok) ready();
    });
  };

  spawnOne();

  return {
    get pid() {
      return current?.alive ? current.child.pid : undefined;
    },
    async stop() {
      stopped = true;
      if (restartTimer) clearTimeout(restartTimer);
      restartTimer = null;
      const entry = current;
      current = null;
      if (!entry?.alive) return;
      entry.child.kill('SIGTERM');
      const grace = setTimeout(() => entry.child.kill('SIGKILL'), killGraceMs);
      await entry.exited;
      clearTimeout(grace);
    },
  };
}

/**
 * Feeds `onLine` the complete lines of a stream that arrives in chunks cut anywhere (a burst of
 * routes comes as a few large chunks). The unfinished tail waits for the next chunk.
 */
export function lineSplitter(onLine: (line: string) => void): { push(chunk: string): void } {
  let partial = '';
  return {
    push(chunk) {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop()!;
      for (const line of lines) onLine(line);
    },
  };
}

/**
 * Resolves true once `ip monitor` has joined its netlink groups: from then on no change goes
 * unreported. The process prints nothing when it starts, so this is read from /proc: one of its
 * sockets is a NETLINK_ROUTE socket with groups. False when `live` turns false first.
 */
async function waitSubscribed(entry: { child: ChildProcess }, live: () => boolean): Promise<boolean> {
  const deadline = Date.now() + readyTimeoutMs;
  while (live()) {
    const pid = entry.child.pid;
    if (pid !== undefined && (await subscribed(pid))) return live();
    if (Date.now() >= deadline) return live();
    await new Promise((r) => setTimeout(r, readyPollMs));
  }
  return false;
}

async function subscribed(pid: number): Promise<boolean> {
  try {
    const inodes = new Set<string>();
    for (const fd of await readdir(`/proc/${pid}/fd`)) {
      const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
      const m = /^socket:\[(\d+)\]$/.exec(target);
      if (m) inodes.add(m[1]!);
    }
    if (inodes.size === 0) return false;
    // Columns: sk Eth(protocol) Pid Groups Rmem Wmem Dump Locks Drops Inode.
    const table = await readFile(`/proc/${pid}/net/netlink`, 'utf8');
    return table
      .split('\n')
      .slice(1)
      .some((row) => {
        const c = row.trim().split(/\s+/);
        return c.length >= 10 && c[1] === '0' && inodes.has(c[9]!) && parseInt(c[3]!, 16) !== 0;
      });
  } catch {
    return false;
  }
}
