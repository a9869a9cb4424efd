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

const formatted = new Map<number, string>();
const FORMATTED_KEPT = 4096;

/**
 * ISO 8601 UTC with milliseconds, the only timestamp form on the wire. Remembers the last few
 * thousand it wrote: an object is read again and again (a merchant polling a request until it is
 * paid), and `toISOString` costs about 0.7 µs, three of them a read of a request.
 */
export function iso(ms: number): string {
  let text = formatted.get(ms);
  if (text === undefined) {
    text = new Date(ms).toISOString();
    if (formatted.size >= FORMATTED_KEPT) formatted.clear();
    formatted.set(ms, text);
  }
  return text;
}

export function isoOrNull(ms: number | null | undefined): string | null {
  return ms == null ? null : iso(ms);
}

export const MINUTE_MS = 60_000;
export const HOUR_MS = 60 * MINUTE_MS;
export const DAY_MS = 24 * HOUR_MS;

export type TimeWindow = { start: number; end: number };

/**
 * Remembers the last window found per key and answers from it while `at` lies inside: a calendar
 * window is the same for every instant in it, and payments come in runs within one window, so
 * the time-zone arithmetic (luxon) runs once a window instead of once a payment.
 */
export function lastWindowCache(): (key: string, at: number, find: () => TimeWindow) => TimeWindow {
  const recent = new Map<string, TimeWindow>();
  return (key, at, find) => {
    const known = recent.get(key);
    if (known && at >= known.start && at < known.end) return { ...known };
    const found = find();
    if (recent.size >= 1000) recent.clear();
    recent.set(key, found);
    return { ...found };
  };
}
