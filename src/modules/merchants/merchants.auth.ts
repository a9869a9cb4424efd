import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, unauthorized } from '../../shared/errors.ts';
import { clockAt } from './merchants.clock.ts';
import { authenticateKey, type Authenticated } from './merchants.service.ts';
import type { NowOrLater } from '../../shared/now-or-later.ts';
import { SharedTokenBuckets, TokenBuckets, type RateLimiter, type TakeResult } from '../../http/rate-limit.ts';
import { clientKey, FailureLimiter, recordInDatabase, retryAfterSeconds } from '../../http/failure-limiter.ts';
import { reportBucketUse } from '../../store/rate-buckets.ts';
import type { Ctx, Deps } from '../context.ts';
import {
  allows,
  accessOf,
  permissionNeeded,
  refusalMessage,
  type KeyAccess,
  type KeyScope,
} from './key-scopes.rules.ts';

declare module 'fastify' {
  interface FastifyRequest {
    ctx: Ctx;
  }
  interface FastifyContextConfig {
    /**
     * What a /v1 route touches, for restricted keys (key-scopes.rules.ts): every route with the key
     * check declares it. A route without it is refused to every key but a full one.
     */
    keyScope?: KeyScope;
  }
}

const limiters = new WeakMap<Deps, RateLimiter | null>();

/** Each key's calls: in this process on SQLite, shared by every process on PostgreSQL. */
function limiterFor(deps: Deps): RateLimiter | null {
  if (!limiters.has(deps)) {
    const perSecond = deps.config.rateLimitPerSecond;
    const burst = perSecond * 2;
    limiters.set(
      deps,
      perSecond <= 0
        ? null
        : deps.store.engine === 'postgres'
          ? new SharedTokenBuckets({
              perSecond,
              burst,
              now: () => deps.clock.now(),
              report: (uses, now) => reportBucketUse(deps.db, { scope: 'api_calls', perSecond, burst }, uses, now),
              reportFailed: (error) =>
                deps.log.warn({ err: error }, 'could not share API rate limits; limiting in this process alone'),
            })
          : new TokenBuckets(perSecond, burst),
    );
  }
  return limiters.get(deps)!;
}

const failedAuth = new WeakMap<Deps, FailureLimiter>();

/** Failed authentications per client address, shared by every route of one app (and on PostgreSQL, every process). */
function failuresFor(deps: Deps): FailureLimiter {
  let limiter = failedAuth.get(deps);
  if (!limiter) {
    const max = deps.config.authFailuresPerMinute;
    limiter = new FailureLimiter({
      max,
      windowMs: 60_000,
      record: deps.store.engine === 'postgres' ? recordInDatabase(deps.db, 'api_key_failures', max, 60_000) : undefined,
      recordFailed: (error) => deps.log.warn({ err: error }, 'could not count a failed authentication in the database'),
    });
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

/**
 * Hook for every /v1 API route: a valid bearer key, turned into the request's Ctx, and for a
 * restricted key the permission the route's `config.keyScope` names. Register it as `onRequest` so
 * a caller without a valid key gets 401, or a key without the permission 403, before the body is
 * read or validated (it also works as a preHandler).
 */
export function apiKeyAuth(deps: Deps) {
  const failures = failuresFor(deps);
  const lookups = lookupsFor(deps);
  // Callback-style, and finished at once when the key's row is read at once: an async hook would
  // cost every API call a promise and a turn of the microtask queue.
  return function requireApiKey(request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void): void {
    const now = deps.clock.now();
    const client = clientKey(request.ip);
    /**
     * A failed authentication, already counted here, is answered once it is counted where every
     * process sees it too (PostgreSQL), so the next attempt finds it counted whichever process it reaches.
     */
    const refuse = (message: string) => {
      const shared = failures.shared(client, now);
      if (shared) void shared.then(() => done(unauthorized(message)));
      else done(unauthorized(message));
    };
    let found: NowOrLater<Authenticated | null>;
    try {
      const allowed = failures.check(client, now);
      if (!allowed.ok) return done(addressLockedOut(allowed.retryAfterMs));
      const key = bearerKey(request.headers.authorization);
      if (typeof key !== 'string') {
        failures.fail(client, now);
        return refuse(key.malformed);
      }
      found = authenticateKey(deps.db, key, now);
    } catch (error) {
      return done(error as Error);
    }
    const finish = (answer: Authenticated | null, counted: boolean) => {
      if (!answer) {
        if (!counted) failures.fail(client, now);
        return refuse(UNKNOWN_KEY);
      }
      let admitted: NowOrLater<void>;
      try {
        admitted = admit(deps, request, answer);
      } catch (error) {
        return done(error as Error);
      }
      if (admitted instanceof Promise) admitted.then(() => done(), done);
      else done();
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

const OK: TakeResult = { ok: true };

/** The key's call, within its rate, made the request's Ctx. */
function admit(deps: Deps, request: FastifyRequest, found: Authenticated): NowOrLater<void> {
  const limited = limiterFor(deps)?.take(found.keyId, deps.clock.now()) ?? OK;
  // Decided in memory almost always: only a burst past a process's share of the rate waits.
  if (limited instanceof Promise) return limited.then((result) => enter(deps, request, found, result));
  enter(deps, request, found, limited);
}

function enter(deps: Deps, request: FastifyRequest, found: Authenticated, limited: TakeResult): void {
  if (!limited.ok) throw rateLimited(deps, limited.retryAfterMs);
  if (found.restriction.kind !== 'full') checkKeyScope(request, found);
  const log = request.log as unknown as Ctx['log'];
  log.setBindings({ merchant_id: found.merchant.id, mode: found.mode });
  request.ctx = {
    deps,
    db: deps.db,
    merchant: found.merchant,
    mode: found.mode,
    clock: clockAt(deps.clock, found.mode, found.clockOffsetMs),
    log,
    actor: { kind: 'api_key', id: found.keyId },
    origin: { ip: request.ip, userAgent: null, requestId: request.id },
  };
}

function rateLimited(deps: Deps, retryAfterMs: number): AppError {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new AppError(
    'rate_limited',
    `Too many requests for this API key: at most ${deps.config.rateLimitPerSecond} a second; retry after ${seconds} s`,
    { limit_per_second: deps.config.rateLimitPerSecond, retry_after_seconds: seconds },
    { 'retry-after': String(seconds) },
  );
}

const UNKNOWN_KEY = 'Unknown or revoked API key';

/**
 * The one place a restricted key's permissions are checked: against the route's declared scope,
 * before the body is read, so a refused call does nothing. A route that declares none is open to
 * full keys only (src/modules/merchants/key-scopes.api.test.ts fails on such a route).
 */
function checkKeyScope(request: FastifyRequest, found: Authenticated): void {
  const scope = request.routeOptions.config.keyScope;
  if (!scope)
    throw new AppError('forbidden.key_scope', 'This route declares no permission: only a full-access key can call it', {
      needed: 'full',
    });
  const access = accessOf(scope, request.method);
  if (!allows(found.restriction, scope.resource, access))
    throw new AppError('forbidden.key_scope', refusalMessage(scope, request.method), {
      needed: permissionNeeded(scope, request.method),
    });
}

function addressLockedOut(retryAfterMs: number): AppError {
  const seconds = retryAfterSeconds(retryAfterMs);
  return new AppError(
    'rate_limited',
    `Too many failed authentications from this address; retry after ${seconds} s`,
    { retry_after_seconds: seconds },
    { 'retry-after': String(seconds) },
  );
}

/** The key of a well-formed Authorization header, or what is wrong with the header. */
function bearerKey(header: string | undefined): string | { malformed: string } {
  if (!header) return { malformed: 'Missing Authorization header: send Authorization: Bearer <API key>' };
  const [scheme, key, extra] = header.split(' ');
  if (scheme?.toLowerCase() !== 'bearer' || !key || extra !== undefined) {
    return { malformed: 'Malformed Authorization header: send Authorization: Bearer <API key>' };
  }
  return key;
}

/**
 * A route's `config.keyScope`: the resource it touches, and its access when its method does not say
 * it (GET reads, anything else writes).
 */
export function keyScope(resource: KeyScope['resource'], access?: KeyAccess): KeyScope {
  return access ? { resource, access } : { resource };
}

/** The permission a route needs, for its operation in the API description (`x-permission`). */
export function keyScopeExtension(route: { method: string; config: unknown }): Record<string, string> | undefined {
  const scope = (route.config as { keyScope?: KeyScope } | undefined)?.keyScope;
  return scope ? { 'x-permission': permissionNeeded(scope, route.method) } : undefined;
}
