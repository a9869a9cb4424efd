import { Type, type Static, type TSchema, type TUnsafe } from 'typebox';
import { AMOUNT_FORM, AMOUNT_PATTERN } from '../shared/money.ts';

// Schema pieces shared by several modules' routes.

export const AmountInput = (description = 'Amount in NZD') =>
  Type.String({
    pattern: AMOUNT_PATTERN,
    maxLength: 24,
    description: `${description}, ${AMOUNT_FORM}`,
    'x-expected': AMOUNT_FORM,
  });

export const AmountObject = Type.Object(
  { value: Type.String({ examples: ['10.00 NZD'] }), formatted: Type.String({ examples: ['$10.00'] }) },
  { title: 'Amount', description: 'Amount: normalised value and display string' },
);

/** A statement reference as banks carry it: up to 12 letters, digits or hyphens. */
export const ReferenceInput = (description: string) =>
  Type.String({ pattern: '^[a-zA-Z0-9-]{0,12}$', description, 'x-expected': 'up to 12 letters, digits or hyphens' });

export const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 UTC with milliseconds' });

/**
 * `schema` or null, written as a list of types (`"type": ["string", "null"]`, as JSON Schema 2020-12
 * and OpenAPI 3.1 have it) or, for an enum, with null among its values; never as an `anyOf`.
 * fast-json-stringify writes a value of a type list after a `typeof` check, but picks an `anyOf`
 * branch by running a validator over the value, branch by branch, on every response: a request
 * object has eleven nullable fields, and those validators were about a fifth of a read's
 * allocations (docs/performance.md, "Nullable fields").
 */
export function Nullable<T extends TSchema>(schema: T): TUnsafe<Static<T> | null> {
  const { type, enum: values } = schema as { type?: unknown; enum?: unknown[] };
  if (typeof type === 'string') return Type.Unsafe<Static<T> | null>({ ...schema, type: [type, 'null'] });
  if (Array.isArray(values)) return Type.Unsafe<Static<T> | null>({ ...schema, enum: [...values, null] });
  throw new Error('Nullable: the schema needs one type, or an enum');
}

export const ErrorBody = Type.Object(
  {
    code: Type.String({ examples: ['bad_request.invalid_param.amount'] }),
    message: Type.String(),
    params: Type.Record(Type.String(), Type.Unknown()),
  },
  {
    title: 'Error',
    description:
      'Every error has this shape. The HTTP status follows from the first segment of code: bad_request 400, unauthorized 401, forbidden 403, not_found 404, request_timeout 408, conflict 409, payload_too_large 413, unsupported_media_type 415, payment_rejected 422, refund_rejected 422, rate_limited 429, headers_too_large 431, internal_error 500, service_unavailable 503',
  },
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
    Type.String({
      minLength: 1,
      maxLength: 255,
      description: 'Retry-safe key: the same key and body within 24 hours returns the first result',
    }),
  ),
});

/** The keywords fast-json-stringify can only serialise by validating the value against each branch. */
const VALIDATING_KEYWORDS = ['anyOf', 'oneOf', 'if'] as const;

/** Keywords whose value is a map of names to schemas: the names are not keywords. */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);
/** Keywords whose value is data, not a schema. */
const DATA_KEYWORDS = new Set(['enum', 'const', 'default', 'examples', 'example']);

/** The path to the first `anyOf`, `oneOf` or `if` in a schema, or null. */
export function validatingKeywordIn(schema: unknown, path = '#'): string | null {
  if (!schema || typeof schema !== 'object') return null;
  if (Array.isArray(schema)) {
    for (const [i, item] of schema.entries()) {
      const found = validatingKeywordIn(item, `${path}/${i}`);
      if (found) return found;
    }
    return null;
  }
  for (const keyword of VALIDATING_KEYWORDS) if (keyword in schema) return `${path}/${keyword}`;
  for (const [key, value] of Object.entries(schema)) {
    if (DATA_KEYWORDS.has(key) || !value || typeof value !== 'object') continue;
    const children: Array<[string, unknown]> = SCHEMA_MAPS.has(key)
      ? Object.entries(value).map(([name, child]) => [`${key}/${name}`, child])
      : [[key, value]];
    for (const [at, child] of children) {
      const found = validatingKeywordIn(child, `${path}/${at}`);
      if (found) return found;
    }
  }
  return null;
}

/** Response schemas found clean, not walked again when the app is built again in the same process. */
const checkedResponseSchemas = new WeakSet<object>();

/**
 * An onRoute hook: a route's response schemas hold no `anyOf`, `oneOf` or `if`, which would make
 * every response of it run validators as it is written (see Nullable). Thrown as the route is
 * registered, so the service does not start with one.
 */
export function refuseValidatingResponseSchemas(route: {
  method: string | string[];
  url: string;
  schema?: { response?: unknown };
}): void {
  for (const [status, schema] of Object.entries((route.schema?.response ?? {}) as Record<string, unknown>)) {
    if (checkedResponseSchemas.has(schema as object)) continue;
    const found = validatingKeywordIn(schema);
    if (!found && schema && typeof schema === 'object') checkedResponseSchemas.add(schema);
    if (found)
      throw new Error(
        `${String(route.method)} ${route.url}: the ${status} response schema has ${found}, which fast-json-stringify checks by validating every response: use Nullable, a type list or an enum`,
      );
  }
}
