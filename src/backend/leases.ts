/** A coordination.k8s.io/v1 Lease, as much of it as the election reads. Times in ms since the epoch. */
export interface LeaseRecord {
  name: string;
  holder: string | null;
  renewTime: number | null;
  acquireTime: number | null;
  durationSeconds: number;
  transitions: number;
  /** Empty for a Lease not yet stored. */
  resourceVersion: string;
}

/** A write lost a race: the Lease exists already (create) or changed since it was read (update). */
export class LeaseConflict extends Error {
  override name = 'LeaseConflict';
}

/**
 * The Leases of the agent's namespace: a watched copy and optimistic writes. Implemented over
 * the Kubernetes API (`kubernetes/leases.ts`) and in memory (`memory-leases.ts`); both pass
 * test/backend/leases-contract.ts.
 */
export interface LeaseApi {
  /** Lists and watches; resolves after the first list. `onChange` follows every change seen. */
  start(onChange: () => void): Promise<void>;
  stop(): Promise<void>;
  /** The newest copy seen (by watch or by this client's own writes), or null. */
  cached(name: string): LeaseRecord | null;
  get(name: string): Promise<LeaseRecord | null>;
  /** Throws LeaseConflict when the Lease exists. */
  create(lease: LeaseRecord): Promise<LeaseRecord>;
  /** Replaces the Lease if its resourceVersion is still `lease.resourceVersion`, else LeaseConflict. */
  update(lease: LeaseRecord): Promise<LeaseRecord>;
}
