import { LeaseConflict, type LeaseApi, type LeaseRecord } from './leases.js';

/** One API server's Leases in memory, shared by the clients of a test. */
export class LeaseBoard {
  readonly leases = new Map<string, LeaseRecord>();
  private rv = 0;
  private readonly listeners = new Set<() => void>();
  /** While true every request fails, as an unreachable API server's would. */
  down = false;

  client(): MemoryLeases {
    return new MemoryLeases(this);
  }

  /** @internal */
  subscribe(f: () => void): () => void {
    this.listeners.add(f);
    return () => this.listeners.delete(f);
  }

  /** @internal */
  write(lease: LeaseRecord, mode: 'create' | 'update'): LeaseRecord {
    if (this.down) throw new Error('API server unreachable');
    const old = this.leases.get(lease.name);
    if (mode === 'create' && old) throw new LeaseConflict(`Lease ${lease.name} already exists`);
    if (mode === 'update') {
      if (!old) throw new Error(`Lease ${lease.name} not found`);
      if (lease.resourceVersion !== '' && lease.resourceVersion !== old.resourceVersion)
        throw new LeaseConflict(`Lease ${lease.name} changed since resourceVersion ${lease.resourceVersion}`);
    }
    const stored = { ...lease, resourceVersion: String(++this.rv) };
    this.leases.set(lease.name, stored);
    for (const f of this.listeners) queueMicrotask(f);
    return { ...stored };
  }
}

/** A client of a LeaseBoard: its cache follows the board (on the next microtask, as a watch would). */
export class MemoryLeases implements LeaseApi {
  private unsubscribe: (() => void) | null = null;

  constructor(private readonly board: LeaseBoard) {}

  start(onChange: () => void): Promise<void> {
    if (this.board.down) return Promise.reject(new Error('API server unreachable'));
    this.unsubscribe = this.board.subscribe(() => {
      onChange();
    });
    return Promise.resolve();
  }

  stop(): Promise<void> {
    this.unsubscribe?.();
    return Promise.resolve();
  }

  cached(name: string): LeaseRecord | null {
    // The board is this client's watch, always caught up: its own writes are there too.
    const l = this.board.leases.get(name);
    return l ? { ...l } : null;
  }

  get(name: string): Promise<LeaseRecord | null> {
    if (this.board.down) return Promise.reject(new Error('API server unreachable'));
    const l = this.board.leases.get(name);
    return Promise.resolve(l ? { ...l } : null);
  }

  create(lease: LeaseRecord): Promise<LeaseRecord> {
    return this.settle(() => this.board.write(lease, 'create'));
  }

  update(lease: LeaseRecord): Promise<LeaseRecord> {
    return this.settle(() => this.board.write(lease, 'update'));
  }

  private settle(f: () => LeaseRecord): Promise<LeaseRecord> {
    return new Promise((resolve) => {
      const stored = f();
      resolve({ ...stored });
    });
  }
}
