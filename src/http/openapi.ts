import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import { statusForCode } from '../shared/errors.ts';
import { ErrorBody } from './schemas.ts';

// Turns what @fastify/swagger generates from the route schemas into the published API
// description (docs/openapi.json, /v1/openapi.json, /docs): an operationId on every operation,
// named schemas under components (every schema with a PascalCase `title`), error responses whose
// `code` lists what the operation can answer, tags, servers, license and the `webhooks` section.
// Pure functions over the document, so `npm run openapi` and the running service agree.

type Json = any;
export type OpenApiExtras = {
  /** The OpenAPI 3.1 `webhooks` section (one POST per event type). */
  webhooks: Record<string, Json>;
  /**
   * `x-` fields a route's config adds to its operation (the permission a restricted API key needs,
   * `x-permission`, from the merchants module's key check).
   */
  operationExtensions?: (route: { method: string; config: unknown }) => Record<string, Json> | undefined;
};

/** Extensions by `METHOD /path/{param}`, gathered while the routes are turned into operations. */
type ExtensionsByOperation = Map<string, Record<string, Json>>;

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

export const TAGS = [
  {
    name: 'Requests',
    description: 'Payment requests: what a payer is asked to pay, with the hosted page URL and QR code.',
  },
  { name: 'Payments', description: 'Payments made against requests, and payments executed under recurring consents.' },
  { name: 'Recurring consents', description: "Payers' approvals for the merchant to charge within limits." },
  { name: 'Subscriptions', description: 'Charges the service makes on a schedule, with retries.' },
  { name: 'Customers', description: 'Payers who gave their details.' },
  {
    name: 'Events',
    description: 'Everything that happened, as sent to webhook endpoints; see also the webhooks section.',
  },
  { name: 'Webhooks', description: 'Endpoints that receive events, signed with their secret.' },
  {
    name: 'Audit',
    description: "Every change to the merchant's data, who made it and from where, hash-chained so edits show.",
  },
  {
    name: 'Refunds',
    description: "Money back to the payer's account, in full or in part, under the merchant's refund authority.",
  },
  {
    name: 'Reconciliation',
    description: 'Bank statements imported and their lines matched to the payments and refunds Tono recorded.',
  },
  {
    name: 'Receipts',
    description:
      'A receipt or tax invoice per successful payment, a credit note per successful refund, their PDFs, and the tax settings.',
  },
  { name: 'Bank accounts', description: "The merchant's accounts that payments go into." },
  {
    name: 'Test helpers',
    description: 'Test keys only: a test clock, payers and banks acting on test objects, and deleting all test data.',
  },
];

const ID_OVERRIDES: Record<string, string> = {
  'POST /v1/webhooks/{id}/rotate-secret': 'rotateWebhookSecret',
  'GET /v1/test-helpers/clock': 'getTestClock',
  'POST /v1/test-helpers/clock/advance': 'advanceTestClock',
  'POST /v1/test-helpers/clock/reset': 'resetTestClock',
  'GET /v1/test-helpers/data': 'getTestData',
  'DELETE /v1/test-helpers/data': 'deleteTestData',
  'POST /v1/test-helpers/requests/{id}/pay': 'payTestRequest',
  'POST /v1/test-helpers/subscriptions/{id}/decline-next': 'declineNextSubscriptionCharges',
  'POST /v1/test-helpers/subscriptions/{id}/cancel-at-bank': 'cancelSubscriptionAtBank',
  'POST /v1/test-helpers/subscriptions/{id}/cancel-by-payer': 'cancelSubscriptionByPayer',
  'POST /v1/test-helpers/recurring-consents/{id}/revoke-at-bank': 'revokeRecurringConsentAtBank',
  'POST /v1/test-helpers/recurring-consents/{id}/revoke-by-payer': 'revokeRecurringConsentByPayer',
  'POST /v1/test-helpers/recurring-consents/{id}/decline-next': 'declineNextRecurringPayments',
  'POST /v1/test-helpers/recurring-consents/{id}/delay': 'delayRecurringPaymentConfirmations',
  'POST /v1/test-helpers/recurring-consents/{id}/latency': 'slowBankForRecurringConsent',
  'POST /v1/test-helpers/subscriptions/{id}/delay': 'delaySubscriptionChargeConfirmations',
  'POST /v1/test-helpers/subscriptions/{id}/latency': 'slowBankForSubscription',
  'POST /v1/test-helpers/payments/{id}/decline-next': 'declineTestPaymentAtBank',
  'POST /v1/test-helpers/payments/{id}/delay': 'delayTestPaymentConfirmation',
  'POST /v1/test-helpers/payments/{id}/latency': 'slowBankForPayment',
  'POST /v1/test-helpers/payments/{id}/release': 'releaseTestPaymentAtBank',
  'POST /v1/test-helpers/requests/{id}/decline-next': 'declineNextAtBankForRequest',
  'POST /v1/test-helpers/requests/{id}/delay': 'delayConfirmationsForRequest',
  'POST /v1/test-helpers/requests/{id}/latency': 'slowBankForRequest',
  'POST /v1/test-helpers/refunds/decline-next': 'declineNextRefunds',
  'GET /v1/refund-authority': 'getRefundAuthority',
  'GET /v1/reconciliation': 'getReconciliation',
  'GET /v1/tax-settings': 'getTaxSettings',
  'POST /v1/tax-settings': 'setTaxSettings',
  'GET /v1/receipts/{id}/pdf': 'getReceiptPdf',
};

const pascal = (words: string) =>
  words
    .split(/[-_]/)
    .filter(Boolean)
    .map((word) => word[0]!.toUpperCase() + word.slice(1))
    .join('');
const singular = (resource: string) => resource.replace(/s$/, '');

/**
 * `GET /v1/requests` → listRequests, `GET /v1/requests/{id}` → getRequest, `POST /v1/requests` →
 * createRequest, `POST /v1/subscriptions/{id}/pause` → pauseSubscription,
 * `GET /v1/requests/{id}/payments` → listRequestPayments; the few that read badly are named above.
 */
export function operationIdFor(method: string, path: string): string {
  const key = `${method.toUpperCase()} ${path}`;
  if (ID_OVERRIDES[key]) return ID_OVERRIDES[key];
  const segments = path.replace(/^\/v1\//, '').split('/');
  const [resource = '', id, action, ...rest] = segments;
  const verb = method.toLowerCase();
  if (rest.length === 0 && id === undefined)
    return `${verb === 'get' ? 'list' : verb === 'post' ? 'create' : verb}${pascal(verb === 'get' ? resource : singular(resource))}`;
  if (rest.length === 0 && id === '{id}' && action === undefined) {
    const verbs: Record<string, string> = {
      get: 'get',
      delete: 'delete',
      patch: 'update',
      put: 'replace',
      post: 'create',
    };
    return `${verbs[verb]}${pascal(singular(resource))}`;
  }
  if (rest.length === 0 && id === '{id}' && action) {
    return verb === 'get'
      ? `list${pascal(singular(resource))}${pascal(action)}`
      : `${pascal(action).replace(/^./, (c) => c.toLowerCase())}${pascal(singular(resource))}`;
  }
  return `${verb}${pascal(segments.filter((s) => !s.startsWith('{')).join('-'))}`;
}

/**
 * Codes an operation answers that its schema does not show: refusals of the service's own rules.
 * Add a code here when a service starts throwing it for an operation.
 */
export const RULE_ERRORS: Record<string, string[]> = {
  // a live request while no live bank is connected; amount is required unless the payer chooses it
  createRequest: ['conflict.no_live_bank', 'bad_request.missing_param.amount'],
  deleteRequest: ['conflict.invalid_state', 'conflict.payment_at_bank'],
  pauseSubscription: ['conflict.invalid_state'],
  resumeSubscription: ['conflict.invalid_state'],
  cancelSubscription: ['conflict.invalid_state'],
  revokeRecurringConsent: ['conflict.invalid_state'],
  payTestRequest: [
    'conflict.invalid_state',
    'service_unavailable',
    // a payer-chosen amount needs one; the payer details the request requires (missingDetails)
    'bad_request.missing_param.amount',
    'bad_request.missing_param.cust_info.email',
    'bad_request.missing_param.cust_info.first_name',
    'bad_request.missing_param.cust_info.last_name',
    'bad_request.missing_param.cust_info.phone',
    'bad_request.missing_param.cust_info.address1',
    'bad_request.missing_param.cust_info.city',
    'bad_request.missing_param.cust_info.postcode',
  ],
  createPayment: [
    // an unknown token, or another merchant's (tokens are never confirmed)
    'not_found.recurring_consent',
    'payment_rejected.end_date',
    'payment_rejected.max_per_payment',
    'payment_rejected.total_count',
    'payment_rejected.total_amount',
    'payment_rejected.max_per_period',
    'payment_rejected.consent_revoked',
    'payment_rejected.consent_not_active',
  ],
  createRefund: [
    'not_found.payment',
    'refund_rejected.exceeds_refundable',
    'refund_rejected.max_per_refund',
    'refund_rejected.max_per_period',
    'conflict.invalid_state',
  ],
  declineNextRefunds: ['conflict.invalid_state', 'service_unavailable'],
  createStatement: ['bad_request.invalid_statement', 'bad_request.unknown_statement_layout'],
  matchStatementLine: [
    'conflict.already_matched',
    'conflict.invalid_state',
    'bad_request.missing_param.payment_id',
    'not_found.payment',
    'not_found.refund',
  ],
  unmatchStatementLine: ['conflict.invalid_state'],
  resendEvent: ['conflict.webhook_disabled', 'not_found.webhook'],
  setTaxSettings: ['forbidden.live_key_required'],
  recoverWebhook: ['conflict.webhook_disabled'],
  updateWebhook: ['bad_request.empty_update'],
  declineNextSubscriptionCharges: ['service_unavailable'],
  cancelSubscriptionAtBank: ['service_unavailable'],
  cancelSubscriptionByPayer: ['service_unavailable'],
  revokeRecurringConsentAtBank: ['service_unavailable'],
  revokeRecurringConsentByPayer: ['service_unavailable'],
  declineNextRecurringPayments: ['service_unavailable'],
  delayRecurringPaymentConfirmations: ['service_unavailable'],
  slowBankForRecurringConsent: ['service_unavailable'],
  delaySubscriptionChargeConfirmations: ['service_unavailable'],
  slowBankForSubscription: ['service_unavailable'],
  declineTestPaymentAtBank: ['conflict.invalid_state', 'service_unavailable'],
  delayTestPaymentConfirmation: ['conflict.invalid_state', 'service_unavailable'],
  slowBankForPayment: ['conflict.invalid_state', 'service_unavailable'],
  releaseTestPaymentAtBank: ['conflict.invalid_state', 'service_unavailable'],
  declineNextAtBankForRequest: ['conflict.invalid_state', 'service_unavailable'],
  delayConfirmationsForRequest: ['conflict.invalid_state', 'service_unavailable'],
  slowBankForRequest: ['conflict.invalid_state', 'service_unavailable'],
};

const statusOf = (code: string) => String(statusForCode(code));

const hasType = (schema: Json, type: string) =>
  schema?.type === type || (Array.isArray(schema?.type) && schema.type.includes(type));

/** Field paths of a body schema, nested objects joined with dots, as the validator names them. */
function fieldsOf(schema: Json, prefix = ''): Array<{ field: string; required: boolean }> {
  if (!hasType(schema, 'object') || !schema.properties) return [];
  const required = new Set<string>(schema.required ?? []);
  return Object.entries(schema.properties as Record<string, Json>).flatMap(([name, child]) => [
    { field: `${prefix}${name}`, required: required.has(name) },
    ...fieldsOf(child, `${prefix}${name}.`),
    ...itemsOf(child, `${prefix}${name}`),
  ]);
}

/** An array's items are named by their position (`events.0`): `events.<index>`, an open code. */
function itemsOf(schema: Json, field: string): Array<{ field: string; required: boolean }> {
  if (!hasType(schema, 'array') || !schema.items || typeof schema.items !== 'object') return [];
  return [{ field: `${field}.<index>`, required: false }, ...fieldsOf(schema.items, `${field}.<index>.`)];
}

const RESOURCE_TYPES: Record<string, string> = {
  requests: 'request',
  payments: 'payment',
  customers: 'customer',
  subscriptions: 'subscription',
  events: 'event',
  webhooks: 'webhook',
  'recurring-consents': 'recurring_consent',
  'bank-accounts': 'bank_account',
  receipts: 'receipt',
  refunds: 'refund',
  statements: 'statement',
  'statement-lines': 'statement_line',
};

/** Every error code an operation can answer, by HTTP status. */
export function errorCodesOf(operationId: string, path: string, operation: Json): Record<string, string[]> {
  const codes = new Set<string>();
  const body = operation.requestBody?.content?.['application/json']?.schema;
  if (body) codes.add('bad_request.invalid_json');
  const fields = [
    ...fieldsOf(body),
    // a path parameter is never missing: without it the path is another route; a header is
    // refused only against its schema (`Idempotency-Key` of 1–255 characters), by its lowercase name
    ...(operation.parameters ?? [])
      .filter((p: Json) => p.in === 'query' || p.in === 'path' || (p.in === 'header' && p.schema))
      .map((p: Json) => ({
        field: p.in === 'header' ? String(p.name).toLowerCase() : (p.name as string),
        required: p.in !== 'path' && p.required === true,
      })),
  ];
  for (const { field, required } of fields) {
    codes.add(`bad_request.invalid_param.${field}`);
    if (required) codes.add(`bad_request.missing_param.${field}`);
  }
  if (
    fields.some((f) => f.field === 'idempotency_key') ||
    (operation.parameters ?? []).some((p: Json) => p.in === 'header' && p.name === 'idempotency-key')
  ) {
    codes.add('conflict.idempotency_key_reused');
  }
  if (operation.security === undefined || operation.security.length > 0) {
    codes.add('unauthorized');
    codes.add('forbidden.key_scope');
  }
  const segments = path.replace(/^\/v1\//, '').split('/');
  const helper = segments[0] === 'test-helpers';
  if (helper) codes.add('not_found.route');
  const resource = helper ? segments[1] : segments[0];
  if (segments.includes('{id}') && resource && RESOURCE_TYPES[resource])
    codes.add(`not_found.${RESOURCE_TYPES[resource]}`);
  for (const code of RULE_ERRORS[operationId] ?? []) codes.add(code);
  const byStatus: Record<string, string[]> = {};
  for (const code of [...codes].sort()) (byStatus[statusOf(code)] ??= []).push(code);
  // a misspelt or extra field can be any name, so every operation can answer this one
  (byStatus['400'] ??= []).push('bad_request.unknown_param.<field>');
  return byStatus;
}

/**
 * Codes an operation shares with every other of its kind, from the layers around it rather than
 * from its own fields and rules: the body's type and size (src/http/errors.ts), a broken
 * percent-encoding in the path (buildApp's frameworkErrors), the key's rate (merchants.auth.ts) and
 * a fault on our side. Sorted, each once.
 */
export function sharedErrorCodesOf(method: string, path: string, operation: Json): string[] {
  const codes = new Set<string>(['internal_error']);
  // Fastify reads a body on every method but GET and HEAD; an action that takes none refuses one
  // that is not JSON with invalid_json (strict-routes.ts), and any body with these two.
  if (['post', 'put', 'patch', 'delete'].includes(method.toLowerCase())) {
    codes.add('bad_request.invalid_json');
    codes.add('payload_too_large');
    codes.add('unsupported_media_type');
  }
  // A path with a parameter still names this operation when the parameter's encoding is broken.
  if (path.includes('{')) codes.add('bad_request.invalid_url');
  if (operation.security === undefined || operation.security.length > 0) codes.add('rate_limited');
  return [...codes].sort();
}

const ERROR_DESCRIPTIONS: Record<string, string> = {
  '400': 'The request is not valid; `params.field` names the field',
  '401': 'No valid API key',
  '403':
    'The API key may not do this: a restricted key without the permission this operation needs (`params.needed`), or a test key where a live one is required',
  '404': "No such object for this key's merchant and mode",
  '409': "Not allowed in the object's current state, or an Idempotency-Key reused with another body",
  '413': 'The body is larger than this operation takes (`params.limit_bytes`)',
  '415': 'The body was not sent as `application/json`',
  '422': 'The payment or refund was refused before any money moved; `params` says what remains',
  '429': 'Too many requests for this API key; retry after `Retry-After` seconds',
  '500': 'A fault on our side, never caused by the request; `params.request_id` finds it in our logs',
  '503': 'The bank could not be reached',
};

/**
 * What the placeholders of open codes stand for. `<field>` (`bad_request.unknown_param.<field>`) is
 * a name as it was sent, any text at all (`status[]`, `Event Types`, or nothing for `?=1`);
 * `<index>` is an array item's position (`bad_request.invalid_param.events.<index>`).
 */
const PLACEHOLDERS: Record<string, { pattern: string; description: string }> = {
  '<field>': { pattern: '[\\s\\S]*', description: 'the name as sent' },
  '<index>': { pattern: '(0|[1-9][0-9]*)', description: "the item's position in the array, from 0" },
};

const placeholderOf = (part: string) => {
  const placeholder = PLACEHOLDERS[part];
  if (!placeholder) throw new Error(`no pattern for the placeholder ${part}`);
  return placeholder;
};

/** The pattern an open code's values match: its fixed text, escaped, and its placeholders' patterns. */
export function openCodePattern(code: string): string {
  const parts = code.split(/(<[a-z]+>)/).filter(Boolean);
  const pattern = parts.map((part) =>
    part.startsWith('<') ? placeholderOf(part).pattern : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
  );
  return `^${pattern.join('')}$`;
}

function openCodeDescription(code: string): string {
  const placeholders = [...new Set(code.match(/<[a-z]+>/g) ?? [])];
  return `${code}: ${placeholders.map((part) => `${part} is ${placeholderOf(part).description}`).join('; ')}`;
}

function errorResponse(status: string, codes: string[]): Json {
  const fixed = [...new Set(codes.filter((code) => !code.includes('<')))].sort();
  const open = [...new Set(codes.filter((code) => code.includes('<')))].sort();
  const branches = [
    ...(fixed.length > 0 ? [{ type: 'string', enum: fixed }] : []),
    ...open.map((code) => ({
      type: 'string',
      pattern: openCodePattern(code),
      description: openCodeDescription(code),
    })),
  ];
  const code = branches.length === 1 ? branches[0] : { anyOf: branches };
  return {
    description: ERROR_DESCRIPTIONS[status] ?? 'Error',
    ...(status === '429' && {
      headers: {
        'Retry-After': {
          description: 'Seconds to wait before calling again',
          schema: { type: 'integer', minimum: 1 },
        },
      },
    }),
    content: {
      'application/json': {
        schema: { allOf: [{ $ref: '#/components/schemas/Error' }, { type: 'object', properties: { code } }] },
      },
    },
  };
}

/** Moves every schema with a PascalCase `title` into components.schemas and refers to it there. */
export function hoistNamedSchemas(document: Json): Json {
  const schemas: Record<string, Json> = { ...(document.components?.schemas ?? {}) };
  const named = (value: Json): value is Json =>
    value &&
    typeof value === 'object' &&
    !Array.isArray(value) &&
    typeof value.title === 'string' &&
    /^[A-Z][A-Za-z0-9]*$/.test(value.title) &&
    (value.type !== undefined || value.anyOf || value.oneOf || value.allOf);
  const walk = (value: Json): Json => {
    if (Array.isArray(value)) return value.map(walk);
    if (!value || typeof value !== 'object') return value;
    const copy: Json = {};
    for (const [key, child] of Object.entries(value)) copy[key] = walk(child);
    if (!named(copy)) return copy;
    const name = copy.title as string;
    // A named object that may be null (`"type": ["object", "null"]`, schemas.ts Nullable) is the
    // named object, or null.
    const orNull = Array.isArray(copy.type) && copy.type.length === 2 && copy.type.includes('null');
    const schema = orNull ? { ...copy, type: copy.type.find((type: string) => type !== 'null') } : copy;
    const existing = schemas[name];
    if (existing && JSON.stringify(existing) !== JSON.stringify(schema))
      throw new Error(`two different schemas are both named ${name}`);
    schemas[name] = schema;
    const ref = { $ref: `#/components/schemas/${name}` };
    return orNull ? { anyOf: [ref, { type: 'null' }] } : ref;
  };
  const { components, ...rest } = document;
  const walked = walk(rest);
  const sorted = Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b)));
  return { ...walked, components: { ...components, schemas: sorted } };
}

/** For operations whose route gives no description: the summary and the conventions that apply to it. */
function describedByKind(operation: Json): string {
  const sentence = `${String(operation.summary ?? '').replace(/\.?$/, '.')}`;
  const query = new Set((operation.parameters ?? []).filter((p: Json) => p.in === 'query').map((p: Json) => p.name));
  if (query.has('starting_after')) {
    return `${sentence} Page with \`limit\` (1–1000) and \`starting_after\` (the last id of the page before). A test key sees test objects only, a live key live ones.`;
  }
  if ((operation.parameters ?? []).some((p: Json) => p.in === 'path')) {
    return `${sentence} An object of another merchant, or of the other mode, is a 404, never a 403.`;
  }
  return sentence;
}

/** The whole post-processing, in order. */
export function finishOpenApiDocument(
  generated: Json,
  extras: OpenApiExtras,
  extensions: ExtensionsByOperation = new Map(),
): Json {
  const document = structuredClone(generated);
  for (const [path, item] of Object.entries(document.paths ?? {}) as Array<[string, Json]>) {
    for (const method of HTTP_METHODS) {
      const operation = item[method];
      if (!operation) continue;
      Object.assign(operation, extensions.get(`${method.toUpperCase()} ${path}`));
      operation.operationId ??= operationIdFor(method, path);
      operation.description ??= describedByKind(operation);
      const byStatus = errorCodesOf(operation.operationId, path, operation);
      for (const code of sharedErrorCodesOf(method, path, operation)) (byStatus[statusOf(code)] ??= []).push(code);
      const responses: Json = {};
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        if (!/^[45]\d\d$/.test(status)) responses[status] = response;
      }
      for (const [status, codes] of Object.entries(byStatus)) responses[status] = errorResponse(status, codes);
      operation.responses = responses;
    }
  }
  document.webhooks = extras.webhooks;
  document.components = {
    ...document.components,
    schemas: { ...document.components?.schemas, Error: JSON.parse(JSON.stringify(ErrorBody)) },
  };
  document.tags = TAGS;
  return hoistNamedSchemas(document);
}

/** The @fastify/swagger options: the document's fixed parts and the post-processing above. */
export function swaggerOptions(extras: OpenApiExtras): FastifyDynamicSwaggerOptions {
  const extensions: ExtensionsByOperation = new Map();
  return {
    transform: ({ schema, url, route }) => {
      const methods = typeof route.method === 'string' ? [route.method] : route.method;
      for (const method of methods) {
        const fields = extras.operationExtensions?.({ method, config: route.config });
        if (fields) extensions.set(`${method} ${url.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`, fields);
      }
      return { schema, url };
    },
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Tono API',
        version: '1',
        description:
          'Payment requests, payments, recurring consents, subscriptions, customers and webhooks for New Zealand bank payments. ' +
          "Authenticate with `Authorization: Bearer sk_live_…` or `sk_test_…`; test keys see test objects only, and another merchant's object is a 404. " +
          'A restricted key gets 403 `forbidden.key_scope` from an operation whose `x-permission` it lacks. ' +
          "Errors are `{ code, message, params }`, with the status fixed by the code's first segment; each operation lists the codes it answers. " +
          'Events are POSTed to your webhook endpoints, signed (see the webhooks section).',
        license: { name: 'MIT', identifier: 'MIT' },
      },
      servers: [
        {
          url: '{base}',
          description: 'Your Tono service (its PUBLIC_BASE_URL)',
          variables: { base: { default: 'http://127.0.0.1:3000', description: 'PUBLIC_BASE_URL of the service' } },
        },
      ],
      components: {
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'sk_live_… or sk_test_…' } },
      },
      security: [{ bearer: [] }],
    },
    transformObject: (documents) =>
      finishOpenApiDocument((documents as { openapiObject: Json }).openapiObject, extras, extensions),
  };
}

const TONO_LOGO = `<svg xmlns="http://www.w3.org/2000/svg" width="120" height="32" viewBox="0 0 120 32" role="img" aria-label="Tono">
<rect width="32" height="32" rx="8" fill="#0b6e4f"/><path d="M9 10h14v3h-5.5v11h-3V13H9z" fill="#fff"/>
<text x="40" y="23" font-family="system-ui, sans-serif" font-size="20" font-weight="700" fill="#fff">Tono</text></svg>`;

/** /docs: the reference under Tono's name, every asset served by this service (no CDN, no validator badge). */
export function docsUiOptions(publicBaseUrl: string) {
  return {
    routePrefix: '/docs',
    // Try it out calls this service, wherever it runs.
    transformSpecification: (spec: Readonly<Record<string, Json>>) => ({
      ...spec,
      servers: [{ url: publicBaseUrl, description: 'This service' }],
    }),
    staticCSP: true,
    // The plugin's policy allows fonts and styles from any https origin and images from the public
    // validator; the page loads none of them, so they are taken out.
    transformStaticCSP: (header: string) =>
      header
        .replace(/ validator\.swagger\.io/g, '')
        .replace(/ https:/g, '')
        .replace("frame-ancestors 'self'", "frame-ancestors 'none'"),
    theme: { title: 'Tono API reference' },
    logo: { type: 'image/svg+xml', content: TONO_LOGO, href: '/docs', target: '_self' as const },
    uiConfig: { deepLinking: true, validatorUrl: null, docExpansion: 'list' as const, defaultModelsExpandDepth: 0 },
  };
}
