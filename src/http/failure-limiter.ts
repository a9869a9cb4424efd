import ipaddr from 'ipaddr.js';

// Limits failed attempts (bad API keys) per key, usually a client address: after `max` failures
// within `windowMs`, every attempt from that key is refused until the window that began with the
// first failure has passed. Successes do not count. In memory, per process: guessing a key needs
// far more tries than any number of processes multiplies the limit by (docs/security.md, "Limits").
// Limits that protect an account are kept in the database instead (src/store/attempts.ts).
//
// Memory is bounded: windows are kept in the order they began, so the expired ones are always at
// the front and are dropped a few at a time as new failures arrive, and past `maxKeys` live
// windows the oldest are dropped too (their senders start a fresh window; an attacker who spreads
// over that many addresses within one window is beyond what a per-address limit can stop anyway).

export type FailureCheck = { ok: true } | { ok: false; retryAfterMs: number };
export type TakenFailure = { ok: true; windowStart: number } | { ok: false; retryAfterMs: number };

export class FailureLimiter {
  private readonly max: number;
  private readonly windowMs: number;
  private readonly maxKeys: number;
  private readonly windows = new Map<string, { start: number; failures: number }>();

  constructor(options: { max: number; windowMs: number; maxKeys?: number }) {
    this.max = options.max;
    this.windowMs = options.windowMs;
    this.maxKeys = options.maxKeys ?? 100_000;
  }

  /** How many keys have a window open (or not yet dropped). */
  get size(): number {
    return this.windows.size;
  }

  /** Whether `key` may try now. */
  check(key: string, now: number): FailureCheck {
    if (this.max <= 0) return { ok: true };
    const window = this.windows.get(key);
    if (!window || now - window.start >= this.windowMs) return { ok: true };
    return window.failures >= this.max ? { ok: false, retryAfterMs: window.start + this.windowMs - now } : { ok: true };
  }

  /** Records a failed attempt of `key`; returns when its window began. */
  fail(key: string, now: number): number {
    if (this.max <= 0) return now;
    const window = this.windows.get(key);
    if (window && now - window.start < this.windowMs) {
      window.failures += 1;
      return window.start;
    }
    // A new window goes to the back, keeping the map in order of start.
    this.windows.delete(key);
    this.windows.set(key, { start: now, failures: 1 });
    this.forget(now);
    return now;
  }

  /**
   * Checks and counts an attempt as failed in one step, for an attempt whose outcome comes later
   * (a lookup that waits for the database): concurrent attempts cannot all pass the check before
   * any of them is counted. Give it back if it succeeds.
   */
  take(key: string, now: number): TakenFailure {
    const allowed = this.check(key, now);
    return allowed.ok ? { ok: true, windowStart: this.fail(key, now) } : allowed;
  }

  /** Uncounts an attempt taken in the window that began at `windowStart`, if that window is still open. */
  giveBack(key: string, windowStart: number): void {
    const window = this.windows.get(key);
    if (window && window.start === windowStart && window.failures > 0) window.failures -= 1;
  }

  private forget(now: number): void {
    for (const [key, window] of this.windows) {
      if (now - window.start < this.windowMs && this.windows.size <= this.maxKeys) break;
      this.windows.delete(key);
    }
  }
}

/**
 * The key a client address is limited under. IPv4 (also written as IPv4-mapped IPv6) is the
 * address itself; IPv6 is its /64, since one host is routinely given a whole /64 and could
 * otherwise take a fresh address for every guess.
 */
export function clientKey(address: string): string {
  // Parsed once per address: every API call asks, and parsing took some 2 µs of each.
  let key = clientKeys.get(address);
  if (key === undefined) {
    if (clientKeys.size >= CLIENT_KEY_CACHE) clientKeys.clear();
    key = parseClientKey(address);
    clientKeys.set(address, key);
  }
  return key;
}

const CLIENT_KEY_CACHE = 10_000;
const clientKeys = new Map<string, string>();

function parseClientKey(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const parts = (parsed as ipaddr.IPv6).parts.slice(0, 4).map((part) => part.toString(16));
  return `${parts.join(':')}::/64`;
}

/** Seconds for a Retry-After header: whole, at least 1. */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}
