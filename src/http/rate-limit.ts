import type { NowOrLater } from '../shared/now-or-later.ts';

// Per-API-key rate limit: a token bucket per key that refills at `perSecond` and holds up to
// `burst` tokens. TokenBuckets keeps it in memory, for a service that is one process (SQLite);
// SharedTokenBuckets keeps one bucket per key for every process on a PostgreSQL database, without
// a database round trip per call (docs/security.md, "Limits").

export type TakeResult = { ok: true } | { ok: false; retryAfterMs: number };

export type RateLimiter = { take(key: string, now: number): NowOrLater<TakeResult> };

export class TokenBuckets implements RateLimiter {
  private readonly perSecond: number;
  private readonly burst: number;
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(perSecond: number, burst = perSecond * 2) {
    this.perSecond = perSecond;
    this.burst = burst;
  }

  take(key: string, now: number): TakeResult {
    const bucket = this.buckets.get(key) ?? { tokens: this.burst, at: now };
    const tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.at) / 1000) * this.perSecond);
    if (tokens < 1) {
      this.buckets.set(key, { tokens, at: now });
      return { ok: false, retryAfterMs: Math.ceil(((1 - tokens) / this.perSecond) * 1000) };
    }
    this.buckets.set(key, { tokens: tokens - 1, at: now });
    if (this.buckets.size > 100_000) this.forgetFull(now);
    return { ok: true };
  }

  /** Drops buckets that have refilled completely: they behave exactly like absent ones. */
  private forgetFull(now: number): void {
    for (const [key, bucket] of this.buckets) {
      if (bucket.tokens + ((now - bucket.at) / 1000) * this.perSecond >= this.burst) this.buckets.delete(key);
    }
  }
}

/**
 * Takes the calls each key let through since the last report off its shared bucket at `now`, and
 * answers each key's level after them (src/store/rate-buckets.ts).
 */
export type ReportUse = (uses: Array<{ key: string; used: number }>, now: number) => Promise<Map<string, number>>;

export type SharedTokenBucketsOptions = {
  perSecond: number;
  burst?: number;
  report: ReportUse;
  now: () => number;
  /** How often the calls let through are reported (and the levels read back). */
  reportEveryMs?: number;
  /** A report failed: until one succeeds, this process limits on what it knows alone. */
  reportFailed?: (error: unknown) => void;
};

const OK: TakeResult = { ok: true };
/** A key unused this long is forgotten here; its next call starts from what the database says. */
const FORGET_AFTER_MS = 10_000;

type Known = {
  /** The shared bucket's level at `at`, as last read (full for a key never read). */
  tokens: number;
  at: number;
  /** Calls let through here since the report under way, or the last one, began. */
  taken: number;
  /** Calls let through here that the report under way is taking off the shared bucket. */
  reporting: number;
  /** Calls that wait for the next report's answer before they are decided. */
  waiting: Array<() => void>;
  usedAt: number;
};

/**
 * One token bucket per key for every process on the database. Each call is decided here, against
 * the key's shared level as last read, refilled since, less the calls this process let through
 * that the level does not count yet. Every `reportEveryMs` (50) the calls are reported and the
 * levels read back, in one statement for every key. What this process cannot see is what the
 * others let through since their last report; so that this stays small whatever the traffic, a
 * process lets through at most a share of `perSecond × reportEveryMs` calls of a key between two
 * reports, and a call past it waits for the next report (started at once) to be decided. With
 * N processes a key may so get up to 2 × (N − 1) shares more than its bucket holds; the bucket then
 * goes below zero and the key is refused until the excess is refilled, so over any span longer
 * than a second it gets its rate.
 */
export class SharedTokenBuckets implements RateLimiter {
  private readonly perMs: number;
  private readonly burst: number;
  private readonly share: number;
  private readonly reportEveryMs: number;
  private readonly options: SharedTokenBucketsOptions;
  private readonly known = new Map<string, Known>();
  private timer: NodeJS.Timeout | null = null;
  private reporting = false;
  private reportAgain = false;
  /** The last report failed: calls are limited on what this process knows, without its share. */
  private alone = false;

  constructor(options: SharedTokenBucketsOptions) {
    this.options = options;
    this.perMs = options.perSecond / 1000;
    this.burst = options.burst ?? options.perSecond * 2;
    this.reportEveryMs = options.reportEveryMs ?? 50;
    this.share = Math.max(1, Math.ceil(this.perMs * this.reportEveryMs));
  }

  take(key: string, now: number): NowOrLater<TakeResult> {
    let known = this.known.get(key);
    if (!known) {
      known = { tokens: this.burst, at: now, taken: 0, reporting: 0, waiting: [], usedAt: now };
      this.known.set(key, known);
    }
    known.usedAt = now;
    const level =
      Math.min(this.burst, known.tokens + Math.max(0, now - known.at) * this.perMs) - known.taken - known.reporting;
    if (level < 1) return { ok: false, retryAfterMs: Math.ceil((1 - level) / this.perMs) };
    if (known.taken < this.share || this.alone) {
      known.taken += 1;
      this.reportSoon();
      return OK;
    }
    const waiting = known.waiting;
    this.reportNow();
    return new Promise((resolve) => waiting.push(() => resolve(this.take(key, this.options.now()))));
  }

  private reportSoon(): void {
    if (this.timer || this.reporting) return;
    this.timer = setTimeout(() => this.reportNow(), this.reportEveryMs);
    this.timer.unref();
  }

  private reportNow(): void {
    if (this.reporting) {
      this.reportAgain = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    void this.report();
  }

  private async report(): Promise<void> {
    const now = this.options.now();
    const uses: Array<{ key: string; used: number }> = [];
    const reported: Known[] = [];
    for (const [key, known] of this.known) {
      if (known.taken > 0) {
        known.reporting = known.taken;
        known.taken = 0;
        uses.push({ key, used: known.reporting });
        reported.push(known);
      } else if (known.waiting.length === 0 && now - known.usedAt > FORGET_AFTER_MS) {
        this.known.delete(key);
      }
    }
    if (uses.length === 0) return;
    this.reporting = true;
    try {
      const levels = await this.options.report(uses, now);
      for (const [i, known] of reported.entries()) {
        known.tokens = levels.get(uses[i]!.key) ?? known.tokens;
        known.at = now;
        known.reporting = 0;
      }
      this.alone = false;
    } catch (error) {
      for (const known of reported) {
        known.taken += known.reporting;
        known.reporting = 0;
      }
      if (!this.alone) this.options.reportFailed?.(error);
      this.alone = true;
    } finally {
      this.reporting = false;
    }
    for (const known of reported) for (const decide of known.waiting.splice(0)) decide();
    if (this.reportAgain) {
      this.reportAgain = false;
      this.reportNow();
    } else if (reported.some((known) => known.taken > 0)) {
      this.reportSoon();
    }
  }
}
