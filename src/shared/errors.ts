// One error type for everything the API reports, and one table from the code's first segment to
// the HTTP status. Services throw AppError; only the HTTP error handler turns it into a reply.

export type ErrorParams = Record<string, unknown>;

export class AppError extends Error {
  readonly code: string;
  readonly params: ErrorParams;
  readonly headers: Record<string, string> | undefined;
  constructor(code: string, message: string, params: ErrorParams = {}, headers?: Record<string, string>) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.params = params;
    this.headers = headers;
  }
  get status(): number {
    return statusForCode(this.code);
  }
  toJSON() {
    return { code: this.code, message: this.message, params: this.params };
  }
}

const statusByFamily: Record<string, number> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  request_timeout: 408,
  payload_too_large: 413,
  unsupported_media_type: 415,
  payment_rejected: 422,
  refund_rejected: 422,
  rate_limited: 429,
  headers_too_large: 431,
  internal_error: 500,
  service_unavailable: 503,
};

export function statusForCode(code: string): number {
  return statusByFamily[code.split('.')[0]] ?? 500;
}

export const invalidParam = (field: string, message: string, params: ErrorParams = {}) =>
  new AppError(`bad_request.invalid_param.${field}`, message, { field, ...params });

export const missingParam = (field: string) =>
  new AppError(`bad_request.missing_param.${field}`, `${field} is required`, { field });

export const unknownParam = (field: string) =>
  new AppError(`bad_request.unknown_param.${field}`, `${field} is not a parameter of this endpoint`, { field });

export const notFound = (type: string, id?: string) =>
  new AppError(`not_found.${type}`, `No such ${type.replace(/_/g, ' ')}${id ? `: ${id}` : ''}`, id ? { id } : {});

export const invalidState = (type: string, status: string, action: string) =>
  new AppError('conflict.invalid_state', `Cannot ${action} a ${type} whose status is ${status}`, { status });

export const unauthorized = (message = 'A valid API key is required: Authorization: Bearer sk_live_… or sk_test_…') =>
  new AppError('unauthorized', message);

export const paymentRejected = (reason: string, message: string, params: ErrorParams = {}) =>
  new AppError(`payment_rejected.${reason}`, message, params);
