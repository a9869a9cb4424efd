import type { FastifyRequest } from 'fastify';

/**
 * Checks that throw an AppError, run in order as one callback-style hook (preValidation, say): a
 * hook on every call costs a microtask turn when it returns a promise.
 */
export function checksHook(...checks: Array<(request: FastifyRequest) => void>) {
  return (request: FastifyRequest, _reply: unknown, done: (error?: Error) => void): void => {
    try {
      for (const check of checks) check(request);
    } catch (error) {
      return done(error as Error);
    }
    done();
  };
}
