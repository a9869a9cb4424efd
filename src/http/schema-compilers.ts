import build from 'fast-json-stringify';
import type { FastifySchemaCompiler, FastifySerializerCompiler } from 'fastify';
import { validatorCompiler } from './validation.ts';

// Fastify turns every route's schemas into code when an app is built: a validator for each checked
// part of a request and a serializer for each response, some 200 ms of CPU for this API's routes,
// most of a build. What a schema compiles to depends on the schema alone (the app shares no schemas
// by $id), so a process keeps what it compiled, found by the schema object (the same objects in
// every build, mostly) or else by its text. A second app built in the same process (the tests build
// one a test) compiles only what is new; a service, which builds one, is unchanged.

type Validator = ReturnType<FastifySchemaCompiler<unknown>>;
type Serializer = (data: unknown) => string;

const validatorsByText = new Map<string, Validator>();
/** By the schema object, then the part it checks: one object could serve as a body and as a query. */
const validatorsBySchema = new WeakMap<object, Map<string, Validator>>();
const serializersByText = new Map<string, Serializer>();
const serializersBySchema = new WeakMap<object, Serializer>();

export const cachedValidatorCompiler: FastifySchemaCompiler<unknown> = (route) => {
  const part = route.httpPart ?? '';
  const schema = route.schema as object;
  const parts = validatorsBySchema.get(schema) ?? new Map<string, Validator>();
  validatorsBySchema.set(schema, parts);
  let validate = parts.get(part);
  if (validate) return validate;
  const text = `${part}\n${JSON.stringify(schema)}`;
  validate = validatorsByText.get(text) ?? validatorCompiler(route);
  validatorsByText.set(text, validate);
  parts.set(part, validate);
  return validate;
};

export const cachedSerializerCompiler: FastifySerializerCompiler<unknown> = ({ schema }) => {
  let serialize = serializersBySchema.get(schema as object);
  if (serialize) return serialize;
  const text = JSON.stringify(schema);
  serialize = serializersByText.get(text) ?? build(schema as Parameters<typeof build>[0]);
  serializersByText.set(text, serialize);
  serializersBySchema.set(schema as object, serialize);
  return serialize;
};
