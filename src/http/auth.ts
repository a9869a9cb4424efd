import type { FastifyReply, FastifyRequest } from 'fastify';
import { unauthorized } from '../shared/errors.ts';
import { shiftedClock } from '../shared/time.ts';
import { authenticateKey } from '../modules/merchants/merchants.service.ts';
import type { Ctx, Deps } from './context.ts';

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
export function apiKeyAuth(deps: Deps) {
  return async function requireApiKey(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    const header = request.headers.authorization;
    if (!header) throw unauthorized('Missing Authorization header: send Authorization: Bearer <API key>');
    const [scheme, key, extra] = header.split(' ');
    if (scheme?.toLowerCase() !== 'bearer' || !key || extra !== undefined) {
      throw unauthorized('Malformed Authorization header: send Authorization: Bearer <API key>');
    }
    const found = await authenticateKey(deps.db, key);
    if (!found) throw unauthorized('Unknown or revoked API key');
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
