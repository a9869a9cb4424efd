import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../shared/errors.ts';
import { schemaErrorToAppError } from './validation.ts';

export const JSON_ONLY = 'Send the body as JSON with Content-Type: application/json';

/**
 * Throws unless a body sent to the API is JSON. Other parsers exist for the HTML forms of the
 * pages, so a form or text body sent to /v1 would otherwise be parsed and reach validation with a
 * misleading error.
 */
export function requireJsonBody(request: FastifyRequest): void {
  if (request.body === undefined || !request.url.startsWith('/v1/')) return;
  const type = request.headers['content-type'] ?? '';
  if (!/^application\/([a-z0-9.+-]+\+)?json\s*(;|$)/i.test(type))
    throw new AppError('unsupported_media_type', JSON_ONLY, {});
}

/** The one place any failure becomes `{ code, message, params }` with its status. */
export function toAppError(error: FastifyError | Error): AppError {
  if (error instanceof AppError) return error;
  const fastifyError = error as FastifyError & { validationContext?: string };
  if (fastifyError.validation)
    return schemaErrorToAppError(fastifyError.validation as any, fastifyError.validationContext ?? 'body');
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('bad_request.invalid_json', 'The body is not valid JSON', {});
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('payload_too_large', 'The body is larger than 100 kB', { limit_bytes: 102_400 });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError('unsupported_media_type', JSON_ONLY, {});
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError('bad_request.invalid_body', 'Content-Length does not match the body', {});
  }
  if (error instanceof SyntaxError && (error as any).statusCode === 400) {
    return new AppError('bad_request.invalid_json', 'The body is not valid JSON', {});
  }
  if (fastifyError.statusCode === 429) {
    return new AppError('rate_limited', 'Too many requests; retry after the time in Retry-After', {});
  }
  if (fastifyError.statusCode && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) {
    return new AppError('bad_request', error.message, {});
  }
  return new AppError('internal_error', 'Something went wrong on our side; the request id is in the logs', {});
}

export function errorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const appError = bodyTooLargeForRoute(toAppError(error), request);
  if (appError.status >= 500) {
    request.log.error({ err: error }, 'request failed');
    appError.params.request_id = request.id;
  }
  if (appError.headers) reply.headers(appError.headers);
  return reply.status(appError.status).send(appError.toJSON());
}

/** A route may take a larger body than the app's 100 kB (a statement file): the error names its own limit. */
function bodyTooLargeForRoute(appError: AppError, request: FastifyRequest): AppError {
  const limit = request.routeOptions?.bodyLimit;
  if (appError.code !== 'payload_too_large' || !limit || limit === 102_400) return appError;
  return new AppError('payload_too_large', `The body is larger than ${Math.floor(limit / 1024)} kB`, {
    limit_bytes: limit,
  });
}

export function notFoundHandler(request: FastifyRequest, reply: FastifyReply) {
  return reply
    .status(404)
    .send({ code: 'not_found.route', message: `No route ${request.method} ${request.url.split('?')[0]}`, params: {} });
}
