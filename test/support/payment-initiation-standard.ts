// Checks recorded exchanges between the connector and a bank against an OpenAPI description of the
// Payments NZ Payment Initiation API v3.0.2: the repository's own (payment-initiation.contract.ts),
// or the official document when it is at hand. Also compares the two, operation by operation, so
// that ours cannot drift from the standard unnoticed. Used by the contract tests only.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { BankExchange } from '../../src/modules/banks/open-banking.http.ts';

type Json = any;
type Operation = { method: string; template: string; pattern: RegExp; pathNames: string[]; id: string; op: Json };

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/** The environment variable naming the official document's file, when it is not beside the checkout. */
export const STANDARD_ENV = 'PAYMENT_INITIATION_STANDARD';

/**
 * Where the official document is looked for: the file named by PAYMENT_INITIATION_STANDARD, else
 * beside the checkout, where CI keeps the Payments NZ documents (it is not ours to copy in).
 */
export function officialStandardFile(): string {
  const named = process.env[STANDARD_ENV];
  if (named) return path.resolve(named);
  const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
  return path.resolve(repoRoot, '..', 'shared', 'standards', 'payment-initiation-nz-v3.0.2.json');
}

/** The official document, or null when its file is not there (a bare clone). */
export function findOfficialStandard(): { file: string; doc: Json } | null {
  const file = officialStandardFile();
  if (!fs.existsSync(file)) return null;
  return { file, doc: JSON.parse(fs.readFileSync(file, 'utf8')) };
}

function pointer(...segments: string[]): string {
  return `#/${segments.map((segment) => encodeURIComponent(segment.replace(/~/g, '~0').replace(/\//g, '~1'))).join('/')}`;
}

function at(doc: Json, ref: string): Json {
  if (!ref.startsWith('#/')) throw new Error(`only references inside the document are followed: ${ref}`);
  return ref
    .slice(2)
    .split('/')
    .reduce((node: Json, key: string) => node?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
}

export class StandardChecker {
  readonly doc: Json;
  private readonly ajv: Ajv;
  private readonly operations: Operation[] = [];
  private readonly compiled = new Map<string, ValidateFunction>();

  /** doc: an OpenAPI 3.0 document, ours or the official one. */
  constructor(doc: Json) {
    this.doc = doc;
    // OpenAPI 3.0 schemas: int32 and similar formats are annotations, not checks.
    this.ajv = new Ajv({ strict: false, allErrors: true });
    addFormats(this.ajv);
    this.ajv.addFormat('int32', {
      type: 'number',
      validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31,
    });
    this.ajv.addSchema(this.doc, 'standard');
    for (const [template, item] of Object.entries<Json>(this.doc.paths)) {
      const pathNames: string[] = [];
      const source = template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{(\w+)\}/g, (_, name: string) => {
        pathNames.push(name);
        return '([^/]+)';
      });
      for (const [method, op] of Object.entries<Json>(item)) {
        if (method === 'parameters') continue;
        this.operations.push({
          method: method.toUpperCase(),
          template,
          pattern: new RegExp(`^${source}$`),
          pathNames,
          id: op.operationId,
          op,
        });
      }
    }
  }

  /** Every operation of the document, by operationId. */
  operationIds(): string[] {
    return this.operations.map((operation) => operation.id);
  }

  /** The operation an exchange is, given the bank's base URL; null for calls outside the standard (the token endpoint). */
  operationOf(exchange: Pick<BankExchange, 'method' | 'url'>, baseUrl: string): Operation | null {
    const url = new URL(exchange.url);
    const base = new URL(baseUrl);
    if (url.origin !== base.origin || !url.pathname.startsWith(base.pathname)) return null;
    const rest = url.pathname.slice(base.pathname.replace(/\/$/, '').length);
    return (
      this.operations.find((operation) => operation.method === exchange.method && operation.pattern.test(rest)) ?? null
    );
  }

  private resolve(node: Json): Json {
    let current = node;
    while (current && typeof current.$ref === 'string') current = at(this.doc, current.$ref);
    return current;
  }

  private validator(ref: string): ValidateFunction {
    let validate = this.compiled.get(ref);
    if (!validate) {
      validate = this.ajv.compile({ $ref: `standard${ref}` });
      this.compiled.set(ref, validate);
    }
    return validate;
  }

  private check(ref: string, value: unknown, where: string, problems: string[]): void {
    const validate = this.validator(ref);
    if (validate(value)) return;
    for (const error of validate.errors ?? []) {
      problems.push(
        `${where}${error.instancePath || ''} ${error.message}${error.params && Object.keys(error.params).length ? ` ${JSON.stringify(error.params)}` : ''}`,
      );
    }
  }

  /**
   * The violations of one exchange: the request's parameters, headers, security and body, the
   * answer's status (declared for the operation), headers (x-fapi-interaction-id echoed) and body.
   */
  violations(exchange: BankExchange, baseUrl: string): string[] {
    const operation = this.operationOf(exchange, baseUrl);
    if (!operation) return [`${exchange.method} ${exchange.url} is not an operation of the standard`];
    const problems: string[] = [];
    const { op, template, method } = operation;
    const opPointer = ['paths', template, method.toLowerCase()];
    const headers = lowerKeys(exchange.requestHeaders);
    const responseHeaders = lowerKeys(exchange.responseHeaders);

    const pathValues = operation.pattern
      .exec(new URL(exchange.url).pathname.slice(new URL(baseUrl).pathname.replace(/\/$/, '').length))!
      .slice(1);
    (op.parameters ?? []).forEach((raw: Json, index: number) => {
      const parameter = this.resolve(raw);
      const where = `request ${parameter.in} ${parameter.name}`;
      let value: string | undefined;
      if (parameter.in === 'header') value = headers[parameter.name.toLowerCase()];
      else if (parameter.in === 'path')
        value = decodeURIComponent(pathValues[operation.pathNames.indexOf(parameter.name)] ?? '');
      else if (parameter.in === 'query') value = new URL(exchange.url).searchParams.get(parameter.name) ?? undefined;
      if (value === undefined) {
        if (parameter.required) problems.push(`${where} is required`);
        return;
      }
      const schemaRef =
        typeof raw.$ref === 'string'
          ? `${raw.$ref}/schema`
          : pointer(...opPointer, 'parameters', String(index), 'schema');
      this.check(schemaRef, value, where, problems);
    });
    // The standard's optional x-fapi-interaction-id is how calls are traced: this service always sends one.
    if (!headers['x-fapi-interaction-id']) problems.push('request header x-fapi-interaction-id is not sent');

    if ((op.security ?? []).length > 0 && !/^Bearer \S+$/.test(headers.authorization ?? '')) {
      problems.push('request header Authorization: the operation needs an OAuth 2 bearer token');
    }

    const requestBody = this.resolve(op.requestBody);
    if (requestBody) {
      if (exchange.requestBody === undefined) {
        if (requestBody.required) problems.push('request body is required');
      } else {
        if (!/^application\/json\b/.test(headers['content-type'] ?? ''))
          problems.push(`request content-type ${headers['content-type']} is not application/json`);
        this.check(
          pointer(...opPointer, 'requestBody', 'content', 'application/json', 'schema'),
          exchange.requestBody,
          'request body',
          problems,
        );
      }
    } else if (exchange.requestBody !== undefined) {
      problems.push('request body sent to an operation that takes none');
    }

    const status = String(exchange.status);
    const rawResponse = op.responses[status] ?? op.responses.default;
    if (!rawResponse) {
      problems.push(`response status ${status} is not declared (declared: ${Object.keys(op.responses).join(', ')})`);
      return problems;
    }
    const response = this.resolve(rawResponse);
    const responsePointer: string[] =
      typeof rawResponse.$ref === 'string'
        ? rawResponse.$ref
            .slice(1)
            .split('/')
            .slice(1)
            .map((key: string) => key.replace(/~1/g, '/').replace(/~0/g, '~'))
        : [...opPointer, 'responses', op.responses[status] ? status : 'default'];
    for (const [name, header] of Object.entries<Json>(response.headers ?? {})) {
      const value = responseHeaders[name.toLowerCase()];
      if (value === undefined) {
        // Declared on every answer: the bank must echo the caller's id.
        if (name.toLowerCase() === 'x-fapi-interaction-id' || header.required)
          problems.push(`response header ${name} is missing`);
        continue;
      }
      const schema = this.resolve(header).schema;
      if (schema?.type === 'integer' ? !/^\d+$/.test(value) : false)
        problems.push(`response header ${name} is not an integer`);
      if (
        name.toLowerCase() === 'x-fapi-interaction-id' &&
        headers['x-fapi-interaction-id'] &&
        value !== headers['x-fapi-interaction-id']
      ) {
        problems.push(
          `response header x-fapi-interaction-id ${value} does not echo the request's ${headers['x-fapi-interaction-id']}`,
        );
      }
    }
    const content = response.content?.['application/json'];
    if (content) {
      if (exchange.responseBody === undefined) problems.push(`response ${status} has no body`);
      else
        this.check(
          pointer(...responsePointer, 'content', 'application/json', 'schema'),
          exchange.responseBody,
          `response ${status} body`,
          problems,
        );
    } else if (exchange.responseBody !== undefined) {
      problems.push(`response ${status} has a body where the standard declares none`);
    }
    return problems;
  }
}

function lowerKeys(record: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [key.toLowerCase(), value]));
}

// Comparing two descriptions. Only what a bank or a client can observe counts: words for people
// (descriptions, titles, examples, summaries, tags) do not, nor how a document factors itself into
// $refs, nor the order of required and enum lists.

const ANNOTATIONS = new Set(['description', 'title', 'example', 'examples', 'summary', 'tags', 'externalDocs']);
/** Schema keywords whose value maps names to schemas: the names are data, never annotations. */
const NAMED_SCHEMAS = new Set(['properties', 'patternProperties', 'definitions', '$defs']);
/** Schema keywords whose value is data, kept as written. */
const VALUES = new Set(['default', 'const']);

function follow(doc: Json, node: Json, seen: string[]): { node: Json; seen: string[] } {
  while (node && typeof node === 'object' && typeof node.$ref === 'string') {
    if (seen.includes(node.$ref)) throw new Error(`circular $ref ${node.$ref}`);
    const target = at(doc, node.$ref);
    if (target === undefined) throw new Error(`$ref ${node.$ref} names nothing in the document`);
    seen = [...seen, node.$ref];
    node = target;
  }
  return { node, seen };
}

function sortedValues(values: Json[]): Json[] {
  return [...values].sort((a, b) =>
    JSON.stringify(a) < JSON.stringify(b) ? -1 : JSON.stringify(a) > JSON.stringify(b) ? 1 : 0,
  );
}

/** A schema with every $ref resolved, annotations dropped and required and enum lists sorted. */
export function normaliseSchema(doc: Json, schema: Json, seen: string[] = []): Json {
  const resolved = follow(doc, schema, seen);
  const node = resolved.node;
  if (Array.isArray(node)) return node.map((item) => normaliseSchema(doc, item, resolved.seen));
  if (!node || typeof node !== 'object') return node;
  const out: Record<string, Json> = {};
  for (const key of Object.keys(node).sort()) {
    const value = node[key];
    if (ANNOTATIONS.has(key)) continue;
    if (NAMED_SCHEMAS.has(key) && value && typeof value === 'object') {
      out[key] = Object.fromEntries(
        Object.keys(value)
          .sort()
          .map((name) => [name, normaliseSchema(doc, value[name], resolved.seen)]),
      );
    } else if ((key === 'required' || key === 'enum') && Array.isArray(value)) {
      out[key] = sortedValues(value);
    } else if (VALUES.has(key)) {
      out[key] = structuredClone(value);
    } else {
      out[key] = normaliseSchema(doc, value, resolved.seen);
    }
  }
  return out;
}

export type OperationFacts = {
  method: string;
  path: string;
  operationId: string;
  /** Keyed "in name", e.g. "header x-idempotency-key": their order means nothing. */
  parameters: Record<string, { required: boolean; schema: Json }>;
  security: Array<Record<string, { type: string; flows?: string[]; scheme?: string; scopes: string[] }>>;
  requestBody: { required: boolean; content: Record<string, { schema: Json }> } | null;
  statuses: string[];
  responses: Record<
    string,
    { headers: Record<string, { required: boolean; schema: Json }>; content: Record<string, { schema: Json }> }
  >;
};

function contentOf(doc: Json, content: Json): Record<string, { schema: Json }> {
  return Object.fromEntries(
    Object.keys(content ?? {})
      .sort()
      .map((media) => [media, { schema: normaliseSchema(doc, content[media].schema) }]),
  );
}

/** What each operation of a document means on the wire, by operationId, comparable with deepEqual. */
export function operationFacts(doc: Json): Map<string, OperationFacts> {
  const facts = new Map<string, OperationFacts>();
  const schemes = doc.components?.securitySchemes ?? {};
  for (const [template, rawItem] of Object.entries<Json>(doc.paths ?? {})) {
    const item = follow(doc, rawItem, []).node;
    for (const method of ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']) {
      const op = item[method];
      if (!op) continue;
      const parameters: OperationFacts['parameters'] = {};
      // An operation's parameter replaces the path's of the same name and place.
      for (const raw of [...(item.parameters ?? []), ...(op.parameters ?? [])]) {
        const parameter = follow(doc, raw, []).node;
        parameters[`${parameter.in} ${parameter.name}`] = {
          required: parameter.required === true,
          schema: normaliseSchema(doc, parameter.schema),
        };
      }
      const security = (op.security ?? doc.security ?? []).map((requirement: Record<string, string[]>) =>
        Object.fromEntries(
          Object.keys(requirement)
            .sort()
            .map((name) => {
              const scheme = follow(doc, schemes[name], []).node ?? {};
              // Flow kinds say which token the operation takes; their URLs are each bank's own.
              const described: { type: string; flows?: string[]; scheme?: string; scopes: string[] } = {
                type: scheme.type,
                scopes: [...requirement[name]].sort(),
              };
              if (scheme.flows) described.flows = Object.keys(scheme.flows).sort();
              if (scheme.scheme) described.scheme = String(scheme.scheme).toLowerCase();
              return [name, described];
            }),
        ),
      );
      const body = op.requestBody ? follow(doc, op.requestBody, []).node : null;
      const statuses = Object.keys(op.responses ?? {}).sort();
      const responses: OperationFacts['responses'] = {};
      for (const status of statuses) {
        const response = follow(doc, op.responses[status], []).node;
        const headers: OperationFacts['responses'][string]['headers'] = {};
        for (const name of Object.keys(response.headers ?? {}).sort()) {
          const header = follow(doc, response.headers[name], []).node;
          headers[name] = { required: header.required === true, schema: normaliseSchema(doc, header.schema) };
        }
        responses[status] = { headers, content: contentOf(doc, response.content) };
      }
      facts.set(op.operationId, {
        method: method.toUpperCase(),
        path: template,
        operationId: op.operationId,
        parameters,
        security,
        requestBody: body ? { required: body.required === true, content: contentOf(doc, body.content) } : null,
        statuses,
        responses,
      });
    }
  }
  return facts;
}

function step(key: string | number): string {
  if (typeof key === 'number') return `[${key}]`;
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

function shown(value: Json): string {
  return value === undefined ? 'nothing' : JSON.stringify(value);
}

/** Where two JSON values differ, one line per difference, each starting with its path from `where`. */
export function differences(
  ours: Json,
  theirs: Json,
  where = '',
  oursName = 'ours',
  theirsName = 'official',
): string[] {
  if (Object.is(ours, theirs)) return [];
  const bothObjects = ours && theirs && typeof ours === 'object' && typeof theirs === 'object';
  if (bothObjects && Array.isArray(ours) && Array.isArray(theirs)) {
    if (JSON.stringify(ours) === JSON.stringify(theirs)) return [];
    // Lists of plain values (required, enum, statuses) differ by their members: name just those.
    if ([...ours, ...theirs].every((value) => value === null || typeof value !== 'object')) {
      const onlyOurs = ours.filter((value) => !theirs.includes(value));
      const onlyTheirs = theirs.filter((value) => !ours.includes(value));
      if (onlyOurs.length + onlyTheirs.length > 0) {
        const parts = [
          onlyOurs.length ? `only in ${oursName} ${shown(onlyOurs)}` : '',
          onlyTheirs.length ? `only in ${theirsName} ${shown(onlyTheirs)}` : '',
        ];
        return [`${where || '.'}: ${parts.filter(Boolean).join('; ')}`];
      }
    }
    if (ours.length !== theirs.length || ours.every((value) => value === null || typeof value !== 'object')) {
      return [`${where || '.'}: ${oursName} ${shown(ours)}, ${theirsName} ${shown(theirs)}`];
    }
    return ours.flatMap((value, index) =>
      differences(value, theirs[index], `${where}${step(index)}`, oursName, theirsName),
    );
  }
  if (bothObjects && !Array.isArray(ours) && !Array.isArray(theirs)) {
    const keys = [...new Set([...Object.keys(ours), ...Object.keys(theirs)])].sort();
    return keys.flatMap((key) => {
      const path = `${where}${step(key)}`;
      if (!(key in theirs)) return [`${path}: only in ${oursName}: ${shown(ours[key])}`];
      if (!(key in ours)) return [`${path}: only in ${theirsName}: ${shown(theirs[key])}`];
      return differences(ours[key], theirs[key], path, oursName, theirsName);
    });
  }
  return [`${where || '.'}: ${oursName} ${shown(ours)}, ${theirsName} ${shown(theirs)}`];
}

/**
 * The differences between two operations' facts. The standard gives every error status the same
 * answer, so a difference there is one line naming all the statuses it is in.
 */
export function operationDifferences(
  ours: OperationFacts,
  theirs: OperationFacts,
  oursName = 'ours',
  theirsName = 'official',
): string[] {
  const byRest = new Map<string, string[]>();
  for (const line of differences(ours, theirs, ours.operationId, oursName, theirsName)) {
    const status = /\.responses\["([^"]+)"\]/.exec(line);
    const rest = status ? line.replace(status[0], '.responses[*]') : line;
    byRest.set(rest, [...(byRest.get(rest) ?? []), ...(status ? [status[1]] : [])]);
  }
  return [...byRest].map(([rest, statuses]) =>
    statuses.length > 0
      ? rest.replace('.responses[*]', `.responses[${statuses.map((code) => JSON.stringify(code)).join('|')}]`)
      : rest,
  );
}
