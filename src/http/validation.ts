import { Ajv, type ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
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
  return ajv;
}

const bodyAjv = makeAjv(false);
const paramsAjv = makeAjv(true);

export const validatorCompiler: FastifySchemaCompiler<any> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? bodyAjv : paramsAjv;
  return ajv.compile(schema as object) as any;
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
  if (error.keyword === 'additionalProperties') return unknownParam(fieldOf(error, String(error.params.additionalProperty)));
  const field = fieldOf(error);
  if (field === 'body' && error.keyword === 'type' && part === 'body') {
    return new AppError('bad_request.invalid_json', 'The body must be a JSON object', {});
  }
  return invalidParam(field, `${field} must be ${expectedOf(error)}`);
}
