// How long a job waits before its next try: one formula for every kind of job, each kind choosing
// its numbers. Pure, so the caps can be checked with any attempt count and any randomness.

export type Backoff = {
  /** The wait after the first failed attempt (and, with jitter, the shortest wait). */
  baseMs: number;
  /** No wait is longer than this. */
  maxMs: number;
  /**
   * With jitter, the wait is uniform between the base and the ceiling, so many jobs failing
   * together retry spread out instead of in waves; without it, the wait is the ceiling.
   */
  jitter: boolean;
};

/** The ceiling of the wait after attempt `attempt` (1-based): the base, doubling, capped. */
export function backoffCeilingMs(attempt: number, backoff: Pick<Backoff, 'baseMs' | 'maxMs'>): number {
  const exponent = Math.min(Math.max(attempt - 1, 0), 40);
  return Math.min(backoff.maxMs, backoff.baseMs * 2 ** exponent);
}

/** The wait after attempt `attempt`; `random` in [0, 1) is only read with jitter. */
export function backoffDelayMs(attempt: number, backoff: Backoff, random = Math.random()): number {
  const ceiling = backoffCeilingMs(attempt, backoff);
  if (!backoff.jitter) return ceiling;
  return Math.round(backoff.baseMs + random * (ceiling - backoff.baseMs));
}

/** A job that throws: 2 s doubling to an hour, then, after its last attempt, kept as failed. */
export const DEFAULT_BACKOFF: Backoff = { baseMs: 2_000, maxMs: 3_600_000, jitter: false };
export const DEFAULT_MAX_ATTEMPTS = 12;
