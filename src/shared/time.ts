// Every "now" in the service comes from a Clock. Live mode uses real time; a merchant's test-mode
// objects use that merchant's test clock, which is real time shifted by an offset the merchant
// can only move forward (POST /v1/test-helpers/clock/advance).

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** How far this clock is ahead of real time (a test clock's offset); absent means 0. */
  readonly offsetMs?: number;
}

export const systemClock: Clock = { now: () => Date.now() };

export function shiftedClock(base: Clock, offsetMs: number): Clock {
  if (offsetMs === 0) return base;
  return { now: () => base.now() + offsetMs, offsetMs: (base.offsetMs ?? 0) + offsetMs };
}

/** ISO 8601 UTC with milliseconds, the only timestamp form on the wire. */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

export function isoOrNull(ms: number | null | undefined): string | null {
  return ms == null ? null : iso(ms);
}

export const MINUTE_MS = 60_000;
export const HOUR_MS = 60 * MINUTE_MS;
export const DAY_MS = 24 * HOUR_MS;
