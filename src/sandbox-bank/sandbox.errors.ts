import type { ErrorObject } from 'ajv';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../shared/errors.ts';
import type { StandardErrorCode } from '../shared/open-banking.wire.ts';

// The standard's error body: { Code, Id, Message, Errors: [{ ErrorCode, Message, Path }] }.
// Every refusal of the sandbox bank's API goes through BankApiError and the handler below.

/** The bank answers no code outside the standard's ErrorCode list. */
export type BankErrorCode = StandardErrorCode;

const statusNames: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  415: 'UnsupportedMediaType',
  429: 'TooManyRequests',
  500: 'InternalServerError',
  501: 'NotImplemented',
};

export class BankApiError extends Error {
  readonly status: number;
  readonly errorCode: BankErrorCode;
  readonly path: string | undefined;
  constructor(status: number, errorCode: BankErrorCode, message: string, path?: string) {
    super(message);
    this.status = status;
    this.errorCode = errorCode;
    this.path = path;
  }
  body(id: string) {
    return {
      Code: `${this.status} ${statusNames[this.status] ?? 'Error'}`,
      Id: id,
      Message: this.message,
      Errors: [{ ErrorCode: this.errorCode, Message: this.message, ...(this.path && { Path: this.path }) }],
    };
  }
}

export const fieldInvalid = (path: string, message: string) => new BankApiError(400, 'Field.Invalid', message, path);
export const fieldMissing = (path: string) => new BankApiError(400, 'Field.Missing', `${path} is required`, path);
/** Unknown ids are 400 in the standard, not 404. */
export const unknownId = (path: string, id: string) =>
  new BankApiError(400, 'Field.Invalid', `No such resource: ${id}`, path);
/** 401: no credentials is Header.Missing, wrong or expired ones Header.Invalid. */
export const unauthorised = (message: string, missing = false) =>
  new BankApiError(401, missing ? 'Header.Missing' : 'Header.Invalid', message, 'Authorization');

function pathOf(error: ErrorObject, part: string, extra?: string): string {
  const segments = error.instancePath.split('/').slice(1);
  if (extra) segments.push(extra);
  const path = segments.join('.');
  if (part === 'headers' || part === 'querystring' || part === 'params') return path || part;
  return path || 'Body';
}

export function toBankApiError(error: FastifyError | Error): BankApiError {
  if (error instanceof BankApiError) return error;
  // The host service's own input checks (nesting, NUL) run before the bank's, in its error shape.
  if (error instanceof AppError && error.status < 500) {
    const field = typeof error.params.field === 'string' ? error.params.field : 'Body';
    return new BankApiError(400, 'Field.Invalid', error.message, field);
  }
  const fastifyError = error as FastifyError & { validationContext?: string };
  if (fastifyError.validation) {
    const first = fastifyError.validation[0] as unknown as ErrorObject;
    const part = fastifyError.validationContext ?? 'body';
    if (first?.keyword === 'required') return fieldMissing(pathOf(first, part, String(first.params.missingProperty)));
    if (first?.keyword === 'additionalProperties') {
      const path = pathOf(first, part, String(first.params.additionalProperty));
      return new BankApiError(400, 'Field.Unexpected', `${path} is not a field of the standard`, path);
    }
    const path = first ? pathOf(first, part) : 'Body';
    return fieldInvalid(path, `${path} is not valid${first?.message ? `: ${first.message}` : ''}`);
  }
  if (fastifyError.statusCode && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) {
    return new BankApiError(400, 'Field.Invalid', error.message, 'Body');
  }
  return new BankApiError(500, 'UnexpectedError', 'The bank could not process the request');
}

export function bankErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const bankError = toBankApiError(error);
  if (bankError.status >= 500) request.log.error({ err: error }, 'sandbox bank request failed');
  return reply.status(bankError.status).send(bankError.body(request.id));
}

export function bankNotFoundHandler(request: FastifyRequest, reply: FastifyReply) {
  // Outside the standard's operations, so no declared status applies; the code is from its list.
  const error = new BankApiError(404, 'Resource.Invalid', `No route ${request.method} ${request.url.split('?')[0]}`);
  return reply.status(404).send(error.body(request.id));
}
