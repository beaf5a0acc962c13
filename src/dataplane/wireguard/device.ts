import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IP } from '../../net/cidr.js';
import { parseDump, type ParsedDump } from '../../wireguard/dump.js';
import { ExecError, type Exec } from '../exec.js';
import type {
  DiffAgainst,
  Ops,
  PeerChanges,
  ReconcileOptions,
  WireGuardConfig,
  WireGuardDevice,
  WireGuardState,
  WireGuardWritten,
} from '../types.js';
import { describeDiff, isEmptyDiff, peerChangesOf, writesOf, type WireGuardDiff } from './diff.js';
import { detachedError } from './detached.js';
import { PeerDiffer } from './incremental.js';
import { parseUapiGet, UapiError, uapiCanSet, uapiRequest, uapiSetRequest } from './uapi.js';
import { defaultArgvBudget, wgSetCommands } from './wg-set.js';
import { logDetails, opsDescribedOnRead } from '../log-summary.js';

export type WireGuardImplementation = 'auto' | 'kernel' | 'userspace';

export interface WireGuardDeviceOptions {
  name: string;
  /** false: adopt an interface someone else made; it is never created or deleted. Default true. */
  createInterface?: boolean;
  /** 'auto' uses the kernel module when `ip link add … type wireguard` works, else wireguard-go. */
  implementation?: WireGuardImplementation;
  /** The wireguard-go command. */
  wireguardGo?: string;
  /** One line per event (never a key). */
  log?: (line: string) => void;
  /** Per-peer lines beyond the first few, when a write changes many peers. */
  debug?: (line: string) => void;
  /** Called after a crashed wireguard-go was restarted and the last config re-applied: addresses
   * and routes on the new interface are gone, so the caller reconciles links and routes. */
  onRestart?: () => void;
  /** Resolves a DNS endpoint's host to an address; default: the system resolver. */
  resolve?: (host: string) => Promise<string>;
  /** How long to wait for wireguard-go's UAPI socket. */
  socketTimeoutMs?: number;
  /** Largest argv of one `wg set`; more changes are split across invocations. */
  argvBudget?: number;
  /** false: talk to wireguard-go through `wg` too, as to the kernel's device (default: its socket). */
  socket?: boolean;
}

type Kind = 'kernel' | 'userspace' | 'adopted';

const maxRestartDelayMs = 30_000;

/** The last meaningful line wireguard-go wrote, for an error that says why it stopped. */
function lastLogLine(path: string): string {
  try {
    const lines = readFileSync(path, 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !/^[│┌└]/.test(l));
    return lines.at(-1) ?? '';
  } catch {
    return '';
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * A WireGuard interface on Linux driven through `wg` and `ip` over an Exec: read with
 * `wg show dump`, written by difference with `wg set` (one invocation per reconcile), so peers
 * that did not change keep their sessions.
 */
export class LinuxWireGuardDevice implements WireGuardDevice {
  readonly name: string;
  /** What the last configure() wrote; zero writes when nothing changed. */
  lastOps: Ops = { writes: 0, details: [] };
  private kind: Kind | null = null;
  private child: ChildProcess | null = null;
  private stopping = false;
  /** Set by detach(), for good: nothing starts wireguard-go or creates the interface any more. */
  private detached = false;
  /** The restart of an exited wireguard-go, waiting out its delay. */
  private restartTimer: NodeJS.Timeout | null = null;
  private restartDelayMs = 500;
  /** The whole config last given, written again to a restarted wireguard-go. */
  private lastConfig: WireGuardConfig | null = null;
  /** Diffs a config against the last write, patching it on a cluster event's pass (incremental.ts). */
  readonly differ = new PeerDiffer();
  private queue: Promise<unknown> = Promise.resolve();
  private readonly log: (line: string) => void;
  private readonly debug: ((line: string) => void) | undefined;

  constructor(
    private readonly exec: Exec,
    private readonly options: WireGuardDeviceOptions,
  ) {
    this.name = options.name;
    this.log = options.log ?? (() => {});
    this.debug = options.debug;
  }

  /** How the interface is run: our kernel link, our wireguard-go, or someone else's. */
  get implementation(): Kind | null {
    return this.kind;
  }

  /** The PID of the wireguard-go this device started and supervises, if any. */
  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  private get socketPath(): string {
    return join(this.exec.wireGuardRunDir, `${this.name}.sock`);
  }

  /** Operations run one at a time: a restart must not interleave with a configure. */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    // Not next.catch(): that promise would hold the last result (a read of every peer) until the next operation.
    this.queue = next.then(
      () => {},
      () => {},
    );
    return next;
  }

  /** Resolves to whether it created the interface (a kernel link, or wireguard-go started). */
  ensure(): Promise<boolean> {
    return this.serial(() => this.ensureNow());
  }

  private get linkArgv(): string[] {
    return ['ip', '-d', '-j', 'link', 'show', 'dev', this.name];
  }

  private async linkInfo(): Promise<{ kind: string | null } | null> {
    try {
      const { stdout } = await this.exec.run(this.linkArgv);
      const links = JSON.parse(stdout) as { linkinfo?: { info_kind?: string } }[];
      return { kind: links[0]?.linkinfo?.info_kind ?? null };
    } catch (e) {
      if (e instanceof ExecError && /does not exist|Cannot find device/i.test(e.stderr)) return null;
      throw e;
    }
  }

  /** Whether it created the interface (a kernel link, or wireguard-go started). */
  private async ensureNow(): Promise<boolean> {
    this.stopping = false;
    if (this.kind === 'userspace' && this.child) return false;
    const link = await this.linkInfo();
    if (this.options.createInterface === false) {
      if (!link)
        throw new Error(
          `WireGuard interface ${this.name} does not exist (it is adopted, not created: createInterface=false)`,
        );
      this.kind = 'adopted';
      return false;
    }
    if (link) {
      // Ours from an earlier run (same name): keep it, and with it every peer's session.
      if (link.kind === 'wireguard') this.kind = 'kernel';
      else if (link.kind === 'tun' && existsSync(this.socketPath)) this.kind = 'userspace';
      else
        throw new Error(`interface ${this.name} exists but is not a WireGuard device (kind ${link.kind ?? 'unknown'})`);
      return false;
    }
    // A pass still running while its agent stops must not bring back what stopping took away.
    if (this.detached) throw detachedError(this.name);
    const implementation = this.options.implementation ?? 'auto';
    if (implementation !== 'userspace') {
      try {
        await this.exec.run(['ip', 'link', 'add', this.name, 'type', 'wireguard']);
        this.kind = 'kernel';
        this.log(`wireguard ${this.name}: created kernel interface`);
        return true;
      } catch (e) {
        const unsupported = e instanceof ExecError && /Unknown device type|not supported/i.test(e.stderr);
        if (implementation === 'kernel' || !unsupported) throw e;
        this.log(`wireguard ${this.name}: no kernel WireGuard (${e.stderr.trim()}), using wireguard-go`);
      }
    }
    await this.startUserspace();
    this.kind = 'userspace';
    return true;
  }

  private async startUserspace(): Promise<void> {
    // A socket left by a killed wireguard-go would look like a live one.
    rmSync(this.socketPath, { force: true });
    const argv = [
      'env',
      'WG_I_PREFER_BUGGY_USERSPACE_TO_POLISHED_KMOD=1',
      this.options.wireguardGo ?? 'wireguard-go',
      '-f',
      this.name,
    ];
    // Output to a file, detached: wireguard-go must outlive an agent stopped without clean-up.
    // A fresh container has no /var/run/wireguard: wireguard-go makes it, but after its log opens there.
    mkdirSync(this.exec.wireGuardRunDir, { recursive: true, mode: 0o700 });
    const logFile = join(this.exec.wireGuardRunDir, `${this.name}.log`);
    const child = this.exec.start(argv, { logFile });
    this.child = child;
    let exited = false;
    let running = false;
    let spawnError: Error | null = null;
    child.on('error', (e) => {
      spawnError = e;
      exited = true;
    });
    let lastLine = '';
    const forward = (data: Buffer) => {
      for (const line of data.toString('utf8').split('\n')) {
        // Skips the banner box wireguard-go draws when the kernel could do the job.
        if (!line.trim() || /^[│┌└]/.test(line)) continue;
        lastLine = line.trim();
        this.log(`wireguard-go ${this.name}: ${lastLine}`);
      }
    };
    child.stdout?.on('data', forward);
    child.stderr?.on('data', forward);
    child.on('exit', (code, signal) => {
      exited = true;
      if (this.child !== child) return;
      this.child = null;
      // A start that failed is reported by ensure(); only a running one is restarted.
      if (this.stopping || !running) return;
      if (this.detached) {
        // Signalled with the agent, as a stopped container's processes are: not a crash.
        this.log(`wireguard-go ${this.name} (pid ${child.pid}) exited (${signal ?? code}); not restarted: stopping`);
        return;
      }
      this.log(
        `wireguard-go ${this.name} (pid ${child.pid}) exited (${signal ?? code}); restarting in ${this.restartDelayMs} ms`,
      );
      this.restartLater();
    });
    const deadline = Date.now() + (this.options.socketTimeoutMs ?? 10_000);
    while (!existsSync(this.socketPath)) {
      if (exited) {
        this.child = null;
        lastLine ||= lastLogLine(logFile);
        throw new Error(
          `wireguard-go ${this.name} exited before creating ${this.socketPath}${spawnError ? `: ${(spawnError as Error).message}` : lastLine ? `: ${lastLine}` : ''}`,
        );
      }
      if (Date.now() > deadline) {
        await this.stopChild();
        throw new Error(`wireguard-go ${this.name} did not create ${this.socketPath} in time`);
      }
      // wireguard-go makes its socket within milliseconds: a first apply waits on this.
      await sleep(5);
    }
    running = true;
    this.log(`wireguard ${this.name}: started wireguard-go (pid ${child.pid}, log ${logFile})`);
  }

  /** Restarts wireguard-go after the delay, unless stopping, detaching or destroying comes first. */
  private restartLater(): void {
    const delay = this.restartDelayMs;
    this.restartDelayMs = Math.min(this.restartDelayMs * 2, maxRestartDelayMs);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      void this.serial(() => this.restartNow());
    }, delay);
  }

  private cancelRestart(why: string): void {
    if (!this.restartTimer) return;
    clearTimeout(this.restartTimer);
    this.restartTimer = null;
    this.log(`wireguard ${this.name}: restart of wireguard-go cancelled: ${why}`);
  }

  private async restartNow(): Promise<void> {
    if (this.stopping || this.detached || this.child) return;
    let restarted = false;
    try {
      await this.startUserspace();
      if (this.lastConfig && !this.detached) await this.configureNow(this.lastConfig);
      restarted = true;
    } catch (e) {
      this.log(`wireguard ${this.name}: restart failed: ${(e as Error).message}`);
    }
    if (this.detached) {
      // Detached while it started: no pass will give it its address and routes, and the agent that
      // would supervise it is going. A wireguard-go the agent did not have running is not left.
      if (this.child) {
        await this.stopChild();
        this.log(`wireguard ${this.name}: stopped the wireguard-go just restarted: stopping`);
      }
      return;
    }
    if (restarted) {
      this.restartDelayMs = 500;
      this.options.onRestart?.();
    } else if (!this.child && !this.stopping) this.restartLater();
  }

  detach(): Promise<void> {
    this.detached = true;
    this.cancelRestart('stopping');
    // Waits for what is queued; a restart among it sees `detached` and undoes itself.
    return this.serial(async () => {});
  }

  read(): Promise<WireGuardState> {
    return this.serial(async () => (await this.readNow()).state);
  }

  dump(): Promise<WireGuardWritten> {
    return this.serial(() => this.readNow());
  }

  /** wireguard-go (ours or adopted) has a configuration socket; the kernel's device has netlink, through `wg`. */
  private get hasSocket(): boolean {
    return this.options.socket !== false && this.kind !== 'kernel' && existsSync(this.socketPath);
  }

  private async readNow(): Promise<ParsedDump> {
    if (this.hasSocket) return parseUapiGet(await uapiRequest(this.socketPath, this.name, 'get=1\n\n'));
    const { stdout } = await this.exec.run(['wg', 'show', this.name, 'dump']);
    return parseDump(stdout);
  }

  configure(
    config: WireGuardConfig,
    options: ReconcileOptions & DiffAgainst<WireGuardWritten> = {},
  ): Promise<PeerChanges> {
    return this.serial(() => this.configureNow(config, options));
  }

  private async resolveEndpoints(config: WireGuardConfig): Promise<WireGuardConfig> {
    // The resolver (node:dns) is loaded only for an endpoint that is a name: docs/performance.md#lazy-loading.
    const resolve =
      this.options.resolve ??
      (async (host: string) => (await (await import('node:dns/promises')).lookup(host)).address);
    const named = (p: WireGuardConfig['peers'][number]) => {
      // Most endpoints are IPv4 literals: thousands of peers per write need no parse for that.
      if (!p.endpoint || /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}:\d+$/.test(p.endpoint)) return null;
      const m = /^([^[\]:]+):(\d+)$/.exec(p.endpoint);
      return m && !IP.tryParse(m[1]!) ? m : null;
    };
    if (!config.peers.some((p) => named(p) !== null)) return config;
    const peers = await Promise.all(
      config.peers.map(async (p) => {
        const m = named(p);
        if (!m) return p;
        // WireGuard stores addresses: resolve here so an unchanged DNS endpoint is no change.
        try {
          const ip = IP.parse(await resolve(m[1]!));
          return { ...p, endpoint: ip.family === 6 ? `[${ip.text}]:${m[2]}` : `${ip.text}:${m[2]}` };
        } catch (e) {
          this.log(
            `wireguard ${this.name}: peer ${p.publicKey}: cannot resolve endpoint ${p.endpoint}: ${(e as Error).message}; keeping the current one`,
          );
          return { ...p, endpoint: null };
        }
      }),
    );
    return { ...config, peers };
  }

  /** `current`: diffed against instead of a read (see DiffAgainst); `wrote`: told what the write left. */
  private async configureNow(
    config: WireGuardConfig,
    options: ReconcileOptions & DiffAgainst<WireGuardWritten> = {},
  ): Promise<PeerChanges> {
    const resolved = await this.resolveEndpoints(config);
    const { diff, after } = this.differ.diff(options.current ?? (await this.readNow()), resolved);
    this.lastConfig = config;
    if (isEmptyDiff(diff)) {
      this.lastOps = { writes: 0, details: [] };
      if (options.wrote) options.wrote(after());
      return peerChangesOf(diff);
    }
    if (this.hasSocket && uapiCanSet(diff)) {
      // The socket answers a bad value with a bare errno; `wg` checks values itself and says which.
      await uapiRequest(this.socketPath, this.name, uapiSetRequest(diff), 120_000).catch((e: unknown) => {
        if (e instanceof UapiError && e.refused) return this.wgSet(diff);
        throw e;
      });
    } else await this.wgSet(diff);
    // Described only when read or logged: the new key's line names its public half, costly to derive
    // (docs/performance.md#wireguard).
    this.lastOps = opsDescribedOnRead(writesOf(diff), () => describeDiff(this.name, diff));
    if (this.options.log || this.debug)
      logDetails(`wireguard ${this.name}`, this.lastOps.details, this.log, this.debug);
    if (options.wrote) options.wrote(after());
    return peerChangesOf(diff);
  }

  private async wgSet(diff: WireGuardDiff): Promise<void> {
    // Keys go to 0600 files in a 0700 directory that lives only for this write.
    const dir = mkdtempSync(join(tmpdir(), 'kilo-wg-'));
    try {
      let n = 0;
      const secretFile = (secret: string) => {
        const path = join(dir, `k${n++}`);
        writeFileSync(path, `${secret}\n`, { mode: 0o600 });
        return path;
      };
      for (const argv of wgSetCommands(this.name, diff, secretFile, this.options.argvBudget ?? defaultArgvBudget)) {
        await this.exec.run(argv, { timeoutMs: 120_000 });
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  destroy(options: { log?: boolean } = {}): Promise<void> {
    this.cancelRestart('the interface is removed');
    return this.serial(async () => {
      this.stopping = true;
      const kind = this.kind;
      this.kind = null;
      this.lastConfig = null;
      if (kind === 'adopted' || kind === null) return;
      if (this.child) {
        await this.stopChild();
        if (options.log) rmSync(join(this.exec.wireGuardRunDir, `${this.name}.log`), { force: true });
        this.log(`wireguard ${this.name}: stopped wireguard-go`);
        return;
      }
      // A kernel link, or a wireguard-go from an earlier run: deleting the link ends either. Ours
      // that exited (signalled with the agent) took its interface along.
      if (!(await this.linkInfo())) return this.log(`wireguard ${this.name}: interface already gone`);
      await this.exec.run(['ip', 'link', 'del', 'dev', this.name]);
      this.log(`wireguard ${this.name}: deleted interface`);
    });
  }

  /** Stops the wireguard-go we started, by its PID: SIGTERM, then SIGKILL after 5 s. */
  private async stopChild(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = null;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  }
}

/** The Linux WireGuard device for `options.name`; the implementation is chosen by ensure(). */
export function createWireGuardDevice(exec: Exec, options: WireGuardDeviceOptions): LinuxWireGuardDevice {
  return new LinuxWireGuardDevice(exec, options);
}
