// Limits failed attempts (bad API keys, wrong passwords, wrong one-time codes) per key, usually a
// client address: after `max` failures within `windowMs`, every attempt from that key is refused
// until the window that began with the first failure has passed. Successes do not count. In memory,
// per process: guessing needs millions of tries, so a per-process share of the limit still stops it.

export type FailureCheck = { ok: true } | { ok: false; retryAfterMs: number };

export class FailureLimiter {
  private readonly max: number;
  private readonly windowMs: number;
  private readonly windows = new Map<string, { start: number; failures: number }>();

  constructor(options: { max: number; windowMs: number }) {
    this.max = options.max;
    this.windowMs = options.windowMs;
  }

  /** Whether `key` may try now. */
  check(key: string, now: number): FailureCheck {
    if (this.max <= 0) return { ok: true };
    const window = this.windows.get(key);
    if (!window || now - window.start >= this.windowMs) return { ok: true };
    return window.failures >= this.max ? { ok: false, retryAfterMs: window.start + this.windowMs - now } : { ok: true };
  }

  /** Records a failed attempt of `key`. */
  fail(key: string, now: number): void {
    if (this.max <= 0) return;
    const window = this.windows.get(key);
    if (!window || now - window.start >= this.windowMs) this.windows.set(key, { start: now, failures: 1 });
    else window.failures += 1;
    if (this.windows.size > 100_000) this.forgetExpired(now);
  }

  private forgetExpired(now: number): void {
    for (const [key, window] of this.windows) if (now - window.start >= this.windowMs) this.windows.delete(key);
  }
}

/** Seconds for a Retry-After header: whole, at least 1. */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}
