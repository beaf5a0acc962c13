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
