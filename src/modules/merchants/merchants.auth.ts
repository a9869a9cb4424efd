import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, unauthorized } from '../../shared/errors.ts';
import { clockAt } from './merchants.clock.ts';
import { authenticateKey, type Authenticated } from './merchants.service.ts';
import type { NowOrLater } from '../../shared/now-or-later.ts';
import { TokenBuckets } from '../../http/rate-limit.ts';
import { clientKey, FailureLimiter, retryAfterSeconds } from '../../http/failure-limiter.ts';
import type { Ctx, Deps } from '../context.ts';

declare module 'fastify' {
  interface FastifyRequest {
    ctx: Ctx;
  }
}

/**
 * Hook for every /v1 API route: a valid bearer key, turned into the request's Ctx. Register it as
 * `onRequest` so a caller without a valid key gets 401 before the body is read or validated (it
 * also works as a preHandler).
 */
const limiters = new WeakMap<Deps, TokenBuckets | null>();

function limiterFor(deps: Deps): TokenBuckets | null {
  if (!limiters.has(deps)) {
    const perSecond = deps.config.rateLimitPerSecond;
    limiters.set(deps, perSecond > 0 ? new TokenBuckets(perSecond) : null);
  }
  return limiters.get(deps)!;
}

const failedAuth = new WeakMap<Deps, FailureLimiter>();

/** Failed authentications per client address, shared by every route of one app. */
function failuresFor(deps: Deps): FailureLimiter {
  let limiter = failedAuth.get(deps);
  if (!limiter) {
    limiter = new FailureLimiter({ max: deps.config.authFailuresPerMinute, windowMs: 60_000 });
    failedAuth.set(deps, limiter);
  }
  return limiter;
}

/**
 * Lookups in flight, by the Authorization header they check: one key read many times at once (a
 * merchant's busy server) is one guess, and reserves one failed attempt, not one per call.
 */
const lookupsInFlight = new WeakMap<Deps, Map<string, number>>();

function lookupsFor(deps: Deps): Map<string, number> {
  let lookups = lookupsInFlight.get(deps);
  if (!lookups) lookupsInFlight.set(deps, (lookups = new Map()));
  return lookups;
}

export function apiKeyAuth(deps: Deps) {
  const failures = failuresFor(deps);
  const lookups = lookupsFor(deps);
  const admit = (
    request: FastifyRequest,
    found: Authenticated | null,
    client: string,
    now: number,
    counted: boolean,
  ): void => {
    if (!found) throw counted ? unauthorized(UNKNOWN_KEY) : refused(failures, client, now, UNKNOWN_KEY);
    const limited = limiterFor(deps)?.take(found.keyId, deps.clock.now());
    if (limited && !limited.ok) {
      const seconds = Math.max(1, Math.ceil(limited.retryAfterMs / 1000));
      throw new AppError(
        'rate_limited',
        `Too many requests for this API key: at most ${deps.config.rateLimitPerSecond} a second; retry after ${seconds} s`,
        { limit_per_second: deps.config.rateLimitPerSecond, retry_after_seconds: seconds },
        { 'retry-after': String(seconds) },
      );
    }
    const log = request.log as unknown as Ctx['log'];
    log.setBindings({ merchant_id: found.merchant.id, mode: found.mode });
    request.ctx = {
      deps,
      db: deps.db,
      merchant: found.merchant,
      mode: found.mode,
      clock: clockAt(deps.clock, found.mode, found.clockOffsetMs),
      log,
    };
  };
  // Callback-style, and finished at once when the key's row is read at once: an async hook would
  // cost every API call a promise and a turn of the microtask queue.
  return function requireApiKey(request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void): void {
    const now = deps.clock.now();
    const client = clientKey(request.ip);
    let found: NowOrLater<Authenticated | null>;
    try {
      found = authenticate(deps, failures, request.headers.authorization, client, now);
    } catch (error) {
      return done(error as Error);
    }
    const finish = (answer: Authenticated | null, counted: boolean) => {
      let failure: Error | undefined;
      try {
        admit(request, answer, client, now, counted);
      } catch (error) {
        failure = error as Error;
      }
      done(failure);
    };
    if (!(found instanceof Promise)) return finish(found, false);
    // The key is looked up in the database (a cache miss, as every unknown key is, and every key on
    // PostgreSQL): the attempt is counted as failed before the wait and given back if the key is
    // found, so concurrent unknown keys cannot all pass the check above while their lookups are
    // under way. A lookup of a header already being looked up is the same attempt: it waits for
    // its own answer without reserving another, and is counted as failed only if the key is not
    // found (as a call answered from the cache is).
    const header = request.headers.authorization!;
    const alongside = lookups.get(header) ?? 0;
    lookups.set(header, alongside + 1);
    const settled = () => {
      const left = (lookups.get(header) ?? 1) - 1;
      if (left > 0) lookups.set(header, left);
      else lookups.delete(header);
    };
    if (alongside > 0) {
      found.then(
        (answer) => {
          settled();
          finish(answer, false);
        },
        (error) => {
          settled();
          done(error);
        },
      );
      return;
    }
    const taken = failures.take(client, now);
    if (!taken.ok) {
      settled();
      return done(addressLockedOut(taken.retryAfterMs));
    }
    found.then(
      (answer) => {
        settled();
        if (answer) failures.giveBack(client, taken.windowStart);
        finish(answer, true);
      },
      (error) => {
        settled();
        done(error);
      },
    );
  };
}

const UNKNOWN_KEY = 'Unknown or revoked API key';

function addressLockedOut(retryAfterMs: number): AppError {
  const seconds = retryAfterSeconds(retryAfterMs);
  return new AppError(
    'rate_limited',
    `Too many failed authentications from this address; retry after ${seconds} s`,
    { retry_after_seconds: seconds },
    { 'retry-after': String(seconds) },
  );
}

function refused(failures: FailureLimiter, client: string, now: number, message: string): AppError {
  failures.fail(client, now);
  return unauthorized(message);
}

/** The key's merchant, from a well-formed Authorization header; throws when the address is locked out or the header is malformed. */
function authenticate(
  deps: Deps,
  failures: FailureLimiter,
  header: string | undefined,
  client: string,
  now: number,
): NowOrLater<Authenticated | null> {
  const allowed = failures.check(client, now);
  if (!allowed.ok) throw addressLockedOut(allowed.retryAfterMs);
  if (!header)
    throw refused(failures, client, now, 'Missing Authorization header: send Authorization: Bearer <API key>');
  const [scheme, key, extra] = header.split(' ');
  if (scheme?.toLowerCase() !== 'bearer' || !key || extra !== undefined) {
    throw refused(failures, client, now, 'Malformed Authorization header: send Authorization: Bearer <API key>');
  }
  return authenticateKey(deps.db, key);
}
