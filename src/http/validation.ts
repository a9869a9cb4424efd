import { Ajv, type ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { isDateTime } from '../shared/date-time.ts';
import { AppError, invalidParam, missingParam, unknownParam } from '../shared/errors.ts';

// Bodies are validated strictly (no coercion, unknown fields refused); query strings and path
// parameters arrive as text, so those are coerced to the declared types.
function makeAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({
    allErrors: false,
    coerceTypes: coerce,
    removeAdditional: false,
    useDefaults: true,
    verbose: true,
    strict: false,
    keywords: ['x-expected'],
  });
  (addFormats as unknown as (ajv: Ajv) => void)(ajv);
  // ajv-formats' date-time takes a lowercase t, a space for the T and any offset, and wants
  // seconds: every date-time field follows the API's one rule instead (shared/date-time.ts).
  ajv.addFormat('date-time', isDateTime);
  return ajv;
}

const bodyAjv = makeAjv(false);
const paramsAjv = makeAjv(true);

// Coercion would read "1e3", "0x10", "+5" and "5 " as numbers; a query-string or path number must
// be written as plain decimal digits, so those are refused before ajv coerces.
const integerText = /^-?(0|[1-9][0-9]*)$/;
const numberText = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?$/;

function numericFields(schema: Record<string, any>): Array<[string, 'integer' | 'number', Record<string, unknown>]> {
  const properties = (schema?.properties ?? {}) as Record<string, Record<string, unknown>>;
  return Object.entries(properties)
    .filter(([, property]) => property.type === 'integer' || property.type === 'number')
    .map(([name, property]) => [name, property.type as 'integer' | 'number', property]);
}

/** Query parameters taken once: a repeated one arrives as an array, which coercion would misreport. */
function singleFields(schema: Record<string, any>): string[] {
  const properties = (schema?.properties ?? {}) as Record<string, Record<string, unknown>>;
  return Object.entries(properties)
    .filter(([, property]) => property.type !== 'array')
    .map(([name]) => name);
}

const repeatedParam = (name: string): ErrorObject =>
  ({
    keyword: 'type',
    instancePath: `/${name}`,
    schemaPath: '',
    params: { type: 'string' },
    parentSchema: { 'x-expected': 'given once, not repeated' },
    message: 'must be given once',
  }) as ErrorObject;

export const validatorCompiler: FastifySchemaCompiler<any> = ({ schema, httpPart }) => {
  if (httpPart === 'body') return bodyAjv.compile(schema as object) as any;
  const validate = paramsAjv.compile(schema as object);
  const numeric = numericFields(schema as Record<string, any>);
  const single = httpPart === 'querystring' ? singleFields(schema as Record<string, any>) : [];
  if (numeric.length === 0 && single.length === 0) return validate as any;
  const strict = (data: unknown) => {
    if (data && typeof data === 'object') {
      const repeated = single.find((name) => Array.isArray((data as Record<string, unknown>)[name]));
      if (repeated !== undefined) {
        strict.errors = [repeatedParam(repeated)];
        return false;
      }
      for (const [name, type, property] of numeric) {
        const raw = (data as Record<string, unknown>)[name];
        if (typeof raw === 'string' && !(type === 'integer' ? integerText : numberText).test(raw)) {
          strict.errors = [
            {
              keyword: 'type',
              instancePath: `/${name}`,
              schemaPath: '',
              params: { type },
              parentSchema: property,
              message: `must be ${type}`,
            },
          ] as ErrorObject[];
          return false;
        }
      }
    }
    const ok = validate(data);
    strict.errors = validate.errors;
    return ok;
  };
  strict.errors = null as ErrorObject[] | null | undefined;
  return strict as any;
};

function fieldOf(error: ErrorObject, extra?: string): string {
  const path = error.instancePath
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (extra) path.push(extra);
  return path.join('.') || 'body';
}

function withArticle(noun: string): string {
  return `${/^[aeiou]/.test(noun) ? 'an' : 'a'} ${noun}`;
}

function expectedOf(error: ErrorObject): string {
  const schema = (error.parentSchema ?? {}) as Record<string, unknown>;
  if (typeof schema['x-expected'] === 'string') return schema['x-expected'];
  switch (error.keyword) {
    case 'type':
      return withArticle(String(error.params.type));
    case 'maxLength':
      return `at most ${String(error.params.limit)} characters`;
    case 'minLength':
      return `at least ${String(error.params.limit)} character${error.params.limit === 1 ? '' : 's'}`;
    case 'minimum':
      return `at least ${String(error.params.limit)}`;
    case 'maximum':
      return `at most ${String(error.params.limit)}`;
    case 'enum':
      return `one of ${(error.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'const':
      return JSON.stringify(error.params.allowedValue);
    case 'pattern':
      return `text matching ${String(error.params.pattern)}`;
    case 'format':
      return `a valid ${String(error.params.format)}`;
    default:
      return error.message ?? 'a valid value';
  }
}

/** Turns the first schema failure into the API's error: missing, unknown or invalid parameter. */
export function schemaErrorToAppError(errors: ErrorObject[], part: string): AppError {
  const error = errors[0];
  if (!error) return new AppError('bad_request.invalid_param.body', 'The request is not valid', {});
  if (error.keyword === 'required') return missingParam(fieldOf(error, String(error.params.missingProperty)));
  if (error.keyword === 'additionalProperties')
    return unknownParam(fieldOf(error, String(error.params.additionalProperty)));
  const field = fieldOf(error);
  if (field === 'body' && error.keyword === 'type' && part === 'body') {
    return new AppError('bad_request.invalid_json', 'The body must be a JSON object', {});
  }
  return invalidParam(field, `${field} must be ${expectedOf(error)}`);
}
