import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify';
import type { Logger } from 'pino';
import { lazyChild } from '../logger.ts';

/**
 * Fastify's `childLoggerFactory`: a lazily made child for calls at the service's own level, an
 * eager one for a route that sets its own level or serialisers.
 */
export const lazyRequestLogger: NonNullable<FastifyServerOptions['childLoggerFactory']> = (
  logger,
  bindings,
  options,
) => {
  if (options.level !== undefined || options.serializers !== undefined) return logger.child(bindings, options);
  return lazyChild(logger as unknown as Logger, bindings) as unknown as FastifyBaseLogger;
};
