import ipaddr from 'ipaddr.js';

// Limits failed attempts (bad API keys, wrong passwords, wrong one-time codes) per key, usually a
// client address: after `max` failures within `windowMs`, every attempt from that key is refused
// until the window that began with the first failure has passed. Successes do not count. In memory,
// per process: guessing needs millions of tries, so a per-process share of the limit still stops it.
//
// Memory is bounded: windows are kept in the order they began, so the expired ones are always at
// the front and are dropped a few at a time as new failures arrive, and past `maxKeys` live
// windows the oldest are dropped too (their senders start a fresh window; an attacker who spreads
// over that many addresses within one window is beyond what a per-address limit can stop anyway).

export type FailureCheck = { ok: true } | { ok: false; retryAfterMs: number };

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

  /** Records a failed attempt of `key`. */
  fail(key: string, now: number): void {
    if (this.max <= 0) return;
    const window = this.windows.get(key);
    if (window && now - window.start < this.windowMs) {
      window.failures += 1;
      return;
    }
    // A new window goes to the back, keeping the map in order of start.
    this.windows.delete(key);
    this.windows.set(key, { start: now, failures: 1 });
    this.forget(now);
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
