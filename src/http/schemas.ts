import { Type, type TSchema } from 'typebox';
import { AMOUNT_FORM, AMOUNT_PATTERN } from '../shared/money.ts';

// Schema pieces shared by several modules' routes.

export const AmountInput = (description = 'Amount in NZD') =>
  Type.String({ pattern: AMOUNT_PATTERN, maxLength: 24, description: `${description}, ${AMOUNT_FORM}`, 'x-expected': AMOUNT_FORM });

export const AmountObject = Type.Object(
  { value: Type.String({ examples: ['10.00 NZD'] }), formatted: Type.String({ examples: ['$10.00'] }) },
  { title: 'Amount', description: 'Amount: normalised value and display string' },
);

/** A statement reference as banks carry it: up to 12 letters, digits or hyphens. */
export const ReferenceInput = (description: string) =>
  Type.String({ pattern: '^[a-zA-Z0-9-]{0,12}$', description, 'x-expected': 'up to 12 letters, digits or hyphens' });

export const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 UTC with milliseconds' });
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const ErrorBody = Type.Object(
  {
    code: Type.String({ examples: ['bad_request.invalid_param.amount'] }),
    message: Type.String(),
    params: Type.Record(Type.String(), Type.Unknown()),
  },
  { title: 'Error', description: 'Every error has this shape. The HTTP status follows from the first segment of code: bad_request 400, unauthorized 401, not_found 404, conflict 409, payment_rejected 422, rate_limited 429, service_unavailable 503' },
);

export const errorResponses = {
  400: ErrorBody,
  401: ErrorBody,
  404: ErrorBody,
  409: ErrorBody,
  422: ErrorBody,
};

export const IdParams = (description: string) => Type.Object({ id: Type.String({ maxLength: 64, description }) });

export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({ minLength: 1, maxLength: 255, description: 'Retry-safe key: the same key and body within 24 hours returns the first result' }),
  ),
});
