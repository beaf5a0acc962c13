export interface BackoffOptions {
  /** The first delay. */
  initialMs: number;
  /** No delay grows beyond this. */
  maxMs: number;
  /** Growth per consecutive failure. */
  factor: number;
  /**
   * Fraction of each delay drawn at random, so agents on many nodes that lost the API server
   * together do not come back in lockstep: a delay d becomes uniform in [d·(1−jitter), d].
   */
  jitter: number;
}

export const defaultBackoff: BackoffOptions = { initialMs: 500, maxMs: 30_000, factor: 2, jitter: 0.5 };

/** Exponential backoff with jitter over consecutive failures; reset after a success. */
export class Backoff {
  private failures = 0;

  constructor(
    private readonly options: BackoffOptions = defaultBackoff,
    private readonly random: () => number = Math.random,
  ) {}

  /** The delay before the next attempt; each call counts one more failure. */
  next(): number {
    const { initialMs, maxMs, factor, jitter } = this.options;
    const ceiling = Math.min(maxMs, initialMs * factor ** Math.min(this.failures, 64));
    this.failures++;
    return ceiling * (1 - jitter * this.random());
  }

  reset(): void {
    this.failures = 0;
  }

  /** Consecutive failures since the last reset. */
  get attempts(): number {
    return this.failures;
  }
}
