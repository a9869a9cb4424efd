import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, unauthorized } from '../../shared/errors.ts';
import { shiftedClock } from '../../shared/time.ts';
import { authenticateKey } from './merchants.service.ts';
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

export function apiKeyAuth(deps: Deps) {
  const failures = failuresFor(deps);
  return async function requireApiKey(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    const now = deps.clock.now();
    const client = clientKey(request.ip);
    const allowed = failures.check(client, now);
    if (!allowed.ok) {
      const seconds = retryAfterSeconds(allowed.retryAfterMs);
      throw new AppError('rate_limited', `Too many failed authentications from this address; retry after ${seconds} s`,
        { retry_after_seconds: seconds }, { 'retry-after': String(seconds) });
    }
    const refuse = (message: string) => {
      failures.fail(client, now);
      return unauthorized(message);
    };
    const header = request.headers.authorization;
    if (!header) throw refuse('Missing Authorization header: send Authorization: Bearer <API key>');
    const [scheme, key, extra] = header.split(' ');
    if (scheme?.toLowerCase() !== 'bearer' || !key || extra !== undefined) {
      throw refuse('Malformed Authorization header: send Authorization: Bearer <API key>');
    }
    const found = await authenticateKey(deps.db, key);
    if (!found) throw refuse('Unknown or revoked API key');
    const limited = limiterFor(deps)?.take(found.keyId, deps.clock.now());
    if (limited && !limited.ok) {
      const seconds = Math.max(1, Math.ceil(limited.retryAfterMs / 1000));
      throw new AppError('rate_limited', `Too many requests for this API key: at most ${deps.config.rateLimitPerSecond} a second; retry after ${seconds} s`,
        { limit_per_second: deps.config.rateLimitPerSecond, retry_after_seconds: seconds }, { 'retry-after': String(seconds) });
    }
    const log = request.log as unknown as Ctx['log'];
    log.setBindings({ merchant_id: found.merchant.id, mode: found.mode });
    request.ctx = {
      deps,
      db: deps.db,
      merchant: found.merchant,
      mode: found.mode,
      clock: found.mode === 'test' ? shiftedClock(deps.clock, found.clockOffsetMs) : deps.clock,
      log,
    };
  };
}
