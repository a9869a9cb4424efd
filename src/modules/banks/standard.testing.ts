// Checks recorded exchanges between the connector and a bank against the official OpenAPI document
// of the Payments NZ Payment Initiation API (v3.0.2). CI keeps the document beside the checkout,
// in ../shared/standards/. Used by the contract tests only.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { BankExchange } from './open-banking.http.ts';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const STANDARD_FILE = path.resolve(repoRoot, '..', 'shared', 'standards', 'payment-initiation-nz-v3.0.2.json');

type Json = any;
type Operation = { method: string; template: string; pattern: RegExp; pathNames: string[]; id: string; op: Json };

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

function pointer(...segments: string[]): string {
  return '#/' + segments.map((segment) => encodeURIComponent(segment.replace(/~/g, '~0').replace(/\//g, '~1'))).join('/');
}

export class StandardChecker {
  readonly doc: Json;
  private readonly ajv: Ajv;
  private readonly operations: Operation[] = [];
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor(file = STANDARD_FILE) {
    this.doc = JSON.parse(fs.readFileSync(file, 'utf8'));
    // OpenAPI 3.0 schemas: int32 and similar formats are annotations, not checks.
    this.ajv = new Ajv({ strict: false, allErrors: true });
    addFormats(this.ajv);
    this.ajv.addFormat('int32', { type: 'number', validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31 });
    this.ajv.addSchema(this.doc, 'standard');
    for (const [template, item] of Object.entries<Json>(this.doc.paths)) {
      const pathNames: string[] = [];
      const source = template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{(\w+)\}/g, (_, name: string) => {
        pathNames.push(name);
        return '([^/]+)';
      });
      for (const [method, op] of Object.entries<Json>(item)) {
        if (method === 'parameters') continue;
        this.operations.push({ method: method.toUpperCase(), template, pattern: new RegExp(`^${source}$`), pathNames, id: op.operationId, op });
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
    return this.operations.find((operation) => operation.method === exchange.method && operation.pattern.test(rest)) ?? null;
  }

  private resolve(node: Json): Json {
    let current = node;
    while (current && typeof current.$ref === 'string') {
      current = current.$ref.slice(2).split('/').reduce((at: Json, key: string) => at[key.replace(/~1/g, '/').replace(/~0/g, '~')], this.doc);
    }
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
      problems.push(`${where}${error.instancePath || ''} ${error.message}${error.params && Object.keys(error.params).length ? ` ${JSON.stringify(error.params)}` : ''}`);
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

    const pathValues = operation.pattern.exec(new URL(exchange.url).pathname.slice(new URL(baseUrl).pathname.replace(/\/$/, '').length))!.slice(1);
    (op.parameters ?? []).forEach((raw: Json, index: number) => {
      const parameter = this.resolve(raw);
      const where = `request ${parameter.in} ${parameter.name}`;
      let value: string | undefined;
      if (parameter.in === 'header') value = headers[parameter.name.toLowerCase()];
      else if (parameter.in === 'path') value = decodeURIComponent(pathValues[operation.pathNames.indexOf(parameter.name)] ?? '');
      else if (parameter.in === 'query') value = new URL(exchange.url).searchParams.get(parameter.name) ?? undefined;
      if (value === undefined) {
        if (parameter.required) problems.push(`${where} is required`);
        return;
      }
      const schemaRef = typeof raw.$ref === 'string' ? `${raw.$ref}/schema` : pointer(...opPointer, 'parameters', String(index), 'schema');
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
        if (!/^application\/json\b/.test(headers['content-type'] ?? '')) problems.push(`request content-type ${headers['content-type']} is not application/json`);
        this.check(pointer(...opPointer, 'requestBody', 'content', 'application/json', 'schema'), exchange.requestBody, 'request body', problems);
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
    const responsePointer: string[] = typeof rawResponse.$ref === 'string' ? rawResponse.$ref.slice(1).split('/').slice(1).map((key: string) => key.replace(/~1/g, '/').replace(/~0/g, '~')) : [...opPointer, 'responses', op.responses[status] ? status : 'default'];
    for (const [name, header] of Object.entries<Json>(response.headers ?? {})) {
      const value = responseHeaders[name.toLowerCase()];
      if (value === undefined) {
        // Declared on every answer: the bank must echo the caller's id.
        if (name.toLowerCase() === 'x-fapi-interaction-id' || header.required) problems.push(`response header ${name} is missing`);
        continue;
      }
      const schema = this.resolve(header).schema;
      if (schema?.type === 'integer' ? !/^\d+$/.test(value) : false) problems.push(`response header ${name} is not an integer`);
      if (name.toLowerCase() === 'x-fapi-interaction-id' && headers['x-fapi-interaction-id'] && value !== headers['x-fapi-interaction-id']) {
        problems.push(`response header x-fapi-interaction-id ${value} does not echo the request's ${headers['x-fapi-interaction-id']}`);
      }
    }
    const content = response.content?.['application/json'];
    if (content) {
      if (exchange.responseBody === undefined) problems.push(`response ${status} has no body`);
      else this.check(pointer(...responsePointer, 'content', 'application/json', 'schema'), exchange.responseBody, `response ${status} body`, problems);
    } else if (exchange.responseBody !== undefined) {
      problems.push(`response ${status} has a body where the standard declares none`);
    }
    return problems;
  }
}

function lowerKeys(record: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [key.toLowerCase(), value]));
}
