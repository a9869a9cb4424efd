// Per-API-key rate limit: a token bucket per key that refills at `perSecond` and holds up to
// `burst` tokens. In memory, per process: with several processes each enforces its own share.

export type TakeResult = { ok: true } | { ok: false; retryAfterMs: number };

export class TokenBuckets {
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
