/** Why a location's leader leads: it holds the Lease, Kilo's annotation rule chose it, or the Lease could not decide. */
export type LeaderReason = 'lease' | 'annotation' | 'fallback';

export interface ElectedLeader {
  node: string;
  reason: LeaderReason;
}

/** Location → its leader, as the elections decided them; the mesh takes this as input. */
export type ElectedLeaders = ReadonlyMap<string, ElectedLeader>;

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

export interface ElectionTiming {
  /** How long a Lease is valid after its renewTime (leaseDurationSeconds). */
  durationMs: number;
  /** How often the holder renews. */
  renewMs: number;
  /**
   * The largest difference between two agents' clocks the election tolerates. Observers keep a
   * holder `skewMs` beyond its renewTime + duration, contenders take over only after that, and
   * the holder stops leading `skewMs` before its own last renewal + duration: with clocks at
   * most `skewMs` apart, two nodes never both act as leader.
   */
  skewMs: number;
}

export const defaultElectionTiming: ElectionTiming = { durationMs: 10_000, renewMs: 2_000, skewMs: 1_000 };
