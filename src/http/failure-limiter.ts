import ipaddr from 'ipaddr.js';
import { takeAttempt } from '../store/attempts.ts';
import type { Db } from '../store/db.ts';

// Limits failed attempts (bad API keys) per key, usually a client address: after `max` failures
// within `windowMs`, every attempt from that key is refused until the window that began with the
// first failure has passed. Successes do not count. Checked in memory, so a call is never slowed
// by the check; with several processes on one database each failure is also counted there
// (`record`, src/store/attempts.ts), and the count read back closes the window in the process that
// reads it, so failures spread over the processes add up (docs/security.md, "Limits").
//
// Memory is bounded: windows are kept in the order they began, so the expired ones are always at
// the front and are dropped a few at a time as new failures arrive, and past `maxKeys` live
// windows the oldest are dropped too (their senders start a fresh window; an attacker who spreads
// over that many addresses within one window is beyond what a per-address limit can stop anyway).

export type FailureCheck = { ok: true } | { ok: false; retryAfterMs: number };
export type TakenFailure = { ok: true; windowStart: number } | { ok: false; retryAfterMs: number };

/** Counts a failure where every process sees it; answers that window's start and its failures. */
export type FailureRecord = (key: string, now: number) => Promise<{ windowStart: number; failures: number }>;

export type FailureLimiterOptions = {
  max: number;
  windowMs: number;
  maxKeys?: number;
  /** Where the processes on one database count failures together; none for a service of one process. */
  record?: FailureRecord;
  recordFailed?: (error: unknown) => void;
};

export class FailureLimiter {
  private readonly max: number;
  private readonly windowMs: number;
  private readonly maxKeys: number;
  private readonly record: FailureRecord | null;
  private readonly recordFailed: (error: unknown) => void;
  private readonly windows = new Map<string, { start: number; failures: number }>();

  constructor(options: FailureLimiterOptions) {
    this.max = options.max;
    this.windowMs = options.windowMs;
    this.maxKeys = options.maxKeys ?? 100_000;
    this.record = options.record ?? null;
    this.recordFailed = options.recordFailed ?? (() => {});
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

  /**
   * Counts a failure, already counted here, where every process sees it, and takes on the count
   * found there. Settles (never rejects) once done; null when there is nowhere to record it.
   */
  shared(key: string, now: number): Promise<void> | null {
    if (!this.record || this.max <= 0) return null;
    return this.record(key, now).then(
      ({ windowStart, failures }) => this.learn(key, windowStart, failures, now),
      (error: unknown) => this.recordFailed(error),
    );
  }

  /**
   * `failures` in the window that began at `windowStart`, counted by every process: an open window
   * here keeps its start (attempts taken in it are given back by it) and takes the larger count.
   */
  private learn(key: string, windowStart: number, failures: number, now: number): void {
    const window = this.windows.get(key);
    if (window && now - window.start < this.windowMs) {
      window.failures = Math.max(window.failures, failures);
      return;
    }
    if (now - windowStart >= this.windowMs) return;
    this.windows.delete(key);
    this.windows.set(key, { start: windowStart, failures });
    this.forget(now);
  }

  private forget(now: number): void {
    for (const [key, window] of this.windows) {
      if (now - window.start < this.windowMs && this.windows.size <= this.maxKeys) break;
      this.windows.delete(key);
    }
  }
}

/** Failures counted in the database's attempt windows under `scope` (src/store/attempts.ts). */
export function recordInDatabase(db: Db, scope: string, max: number, windowMs: number): FailureRecord {
  const limit = { scope, max, windowMs };
  return async (key, now) => {
    const taken = await takeAttempt(db, limit, key, now);
    // Refused: the count stopped one past the limit, in a window that ends in `retryAfterMs`.
    return taken.ok
      ? { windowStart: taken.windowStart, failures: taken.attempts }
      : { windowStart: now + taken.retryAfterMs - windowMs, failures: max + 1 };
  };
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
