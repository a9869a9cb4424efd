import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { Compile } from 'typebox/compile';
import { buildEventData, EVENT_TYPES, versionOf } from '../modules/events/events.builders.ts';
import { EVENT_DATA_SCHEMAS, eventEnvelopeSchema, eventSchemaName } from '../modules/events/events.openapi.ts';
import { OPENAPI_FILE } from '../../scripts/openapi.ts';
import { errorCodesOf, hoistNamedSchemas, operationIdFor } from './openapi.ts';

// The published API description (docs/openapi.json; openapi.test.ts keeps it equal to what the
// routes generate) passes Redocly's recommended rules with no error and no warning, and says
// what a client generator needs: ids, tags, texts, named schemas, error codes, event payloads.

const root = path.resolve(import.meta.dirname, '../..');
const document = JSON.parse(fs.readFileSync(OPENAPI_FILE, 'utf8'));
const operations = Object.entries(document.paths).flatMap(([route, item]: [string, any]) =>
  Object.entries(item).map(([method, operation]: [string, any]) => ({ route, method, operation })),
);

test('Redocly lint (recommended rules) finds no error and no warning', () => {
  const cli = path.join(root, 'node_modules/@redocly/cli/bin/cli.js');
  const result = spawnSync(process.execPath, [cli, 'lint', OPENAPI_FILE, '--extends=recommended', '--format=json'], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
    timeout: 120_000,
  });
  const report = JSON.parse(result.stdout.slice(result.stdout.indexOf('{')));
  const problems = report.problems.map(
    (p: any) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location?.[0]?.pointer}`,
  );
  assert.deepEqual(problems, []);
  assert.equal(result.status, 0, result.stderr);
});

test('every operation has a unique operationId, a tag, a summary and a description', () => {
  const ids = operations.map(({ operation }) => operation.operationId);
  assert.equal(new Set(ids).size, ids.length);
  for (const { route, method, operation } of operations) {
    const where = `${method.toUpperCase()} ${route}`;
    assert.match(operation.operationId, /^[a-z][A-Za-z]+$/, where);
    assert.ok(operation.tags?.length === 1 && document.tags.some((t: any) => t.name === operation.tags[0]), where);
    assert.ok(operation.summary?.length > 0 && operation.description?.length > 0, where);
  }
});

test('objects are named schemas under components, referenced from the operations', () => {
  for (const name of [
    'Request',
    'Payment',
    'Customer',
    'RecurringConsent',
    'Subscription',
    'Event',
    'WebhookEndpoint',
    'Error',
    'Delivery',
    'Amount',
    'CreateRequest',
  ]) {
    assert.ok(document.components.schemas[name], name);
  }
  const text = JSON.stringify(document.paths);
  for (const name of Object.keys(document.components.schemas).filter((n) => !n.endsWith('Event') || n === 'Event')) {
    assert.ok(
      text.includes(`"#/components/schemas/${name}"`) ||
        JSON.stringify(document.components.schemas).includes(`"#/components/schemas/${name}"`),
      `${name} is referenced`,
    );
  }
  assert.deepEqual(
    JSON.parse(
      JSON.stringify(
        document.paths['/v1/requests/{id}'].get.responses['200'].content['application/json'].schema.properties.request,
      ),
    ),
    { $ref: '#/components/schemas/Request' },
  );
});

test('each error response lists its codes, each with the status its first segment fixes', () => {
  const statusOf: Record<string, string> = {
    bad_request: '400',
    unauthorized: '401',
    forbidden: '403',
    not_found: '404',
    conflict: '409',
    payment_rejected: '422',
    refund_rejected: '422',
    payload_too_large: '413',
    unsupported_media_type: '415',
    rate_limited: '429',
    internal_error: '500',
    service_unavailable: '503',
  };
  for (const { route, method, operation } of operations) {
    for (const [status, response] of Object.entries(operation.responses) as Array<[string, any]>) {
      if (!/^[45]/.test(status)) continue;
      const code = response.content['application/json'].schema.allOf[1].properties.code;
      const listed: string[] = code.enum ?? code.anyOf?.flatMap((branch: any) => branch.enum ?? []) ?? [];
      assert.ok(listed.length > 0 || code.pattern || code.anyOf, `${method} ${route} ${status}`);
      for (const value of listed) assert.equal(statusOf[value.split('.')[0]!], status, `${value} under ${status}`);
    }
  }
  const pay = document.paths['/v1/payments'].post.responses;
  assert.ok(
    pay['422'].content['application/json'].schema.allOf[1].properties.code.enum.includes(
      'payment_rejected.max_per_period',
    ),
  );
  assert.deepEqual(
    document.paths['/v1/requests/{id}'].get.responses['404'].content['application/json'].schema.allOf[1].properties.code
      .enum,
    ['not_found.request'],
  );
});

test('the webhooks section has every event type with its exact data schema', () => {
  assert.deepEqual(Object.keys(document.webhooks).sort(), [...EVENT_TYPES].sort());
  for (const type of EVENT_TYPES) {
    const body = document.webhooks[type].post.requestBody.content['application/json'].schema;
    assert.deepEqual(body, { $ref: `#/components/schemas/${eventSchemaName(type)}` });
    const envelope = document.components.schemas[eventSchemaName(type)];
    assert.deepEqual(envelope.properties.type, { const: type, type: 'string' });
    const data = hoistNamedSchemas({ components: {}, data: JSON.parse(JSON.stringify(EVENT_DATA_SCHEMAS[type])) }).data;
    assert.deepEqual(envelope.properties.data, data, type);
  }
  assert.deepEqual(document.info.license, { name: 'MIT', identifier: 'MIT' });
  assert.equal(document.servers.length, 1);
});

test('operation ids follow the path: list, get, create, update, delete, actions', () => {
  assert.equal(operationIdFor('get', '/v1/requests'), 'listRequests');
  assert.equal(operationIdFor('get', '/v1/recurring-consents/{id}'), 'getRecurringConsent');
  assert.equal(operationIdFor('post', '/v1/bank-accounts'), 'createBankAccount');
  assert.equal(operationIdFor('patch', '/v1/webhooks/{id}'), 'updateWebhook');
  assert.equal(operationIdFor('put', '/v1/recurring-consents/{id}/revoke'), 'revokeRecurringConsent');
  assert.equal(operationIdFor('get', '/v1/subscriptions/{id}/payments'), 'listSubscriptionPayments');
  fc.assert(
    fc.property(
      fc.constantFrom('get', 'post', 'put', 'patch', 'delete'),
      fc.array(fc.stringMatching(/^[a-z]{1,8}(-[a-z]{1,8})?$/), { minLength: 1, maxLength: 4 }),
      fc.boolean(),
      (method, words, withId) => {
        const segments = withId ? [words[0]!, '{id}', ...words.slice(1)] : words;
        assert.match(operationIdFor(method, `/v1/${segments.join('/')}`), /^[a-z][A-Za-z]*$/);
      },
    ),
  );
});

test('the error codes of an operation follow from its fields, its path and its rules', () => {
  const codes = errorCodesOf('createThing', '/v1/things', {
    requestBody: {
      content: {
        'application/json': {
          schema: {
            type: 'object',
            required: ['amount'],
            properties: {
              amount: { type: 'string' },
              options: { type: 'object', required: ['period'], properties: { period: { type: 'string' } } },
            },
          },
        },
      },
    },
    parameters: [{ in: 'header', name: 'idempotency-key' }],
  });
  assert.deepEqual(codes, {
    '400': [
      'bad_request.invalid_json',
      'bad_request.invalid_param.amount',
      'bad_request.invalid_param.options',
      'bad_request.invalid_param.options.period',
      'bad_request.missing_param.amount',
      'bad_request.missing_param.options.period',
      'bad_request.unknown_param.<field>',
    ],
    '401': ['unauthorized'],
    '403': ['forbidden.key_scope'],
    '409': ['conflict.idempotency_key_reused'],
  });
});

test('every envelope the builders make is valid against its schema, and one with a stray field is not', () => {
  const address = {
    address1: '1 Queen St',
    address2: '',
    address3: '',
    address4: '',
    city: 'Auckland',
    postcode: '1010',
  };
  const at = '2026-11-21T10:00:00.000Z';
  const status: Record<string, string> = {
    'request.expired': 'expired',
    'payment.created': 'awaiting-consent',
    'payment.status_updated': 'successful',
    'recurring_payment.authorised': 'active',
    'recurring_payment.revoked': 'revoked',
    'recurring_payment.expired': 'expired',
    'request.status_updated': 'paid',
    'refund.created': 'pending',
    'refund.status_updated': 'successful',
  };
  for (const type of EVENT_TYPES) {
    const source = {
      id: 'x_1',
      merchant_identifier: null,
      user_id: 'user_1',
      request_id: 'request_1',
      created_at: at,
      updated_at: at,
      expires_at: null,
      status: status[type] ?? 'active',
      token: 'rct_1',
      last_payment_id: 'payment_1',
      last_error: 'insufficient_funds',
      attempts: 2,
      charge_at: at,
      next_attempt_at: at,
      skipped_charge_at: at,
      next_charge_at: null,
      email: 'payer@example.com',
      first_name: null,
      last_name: 'Ngata',
      phone: null,
      address,
      url: 'https://example.com/hooks',
      disabled_at: at,
      failing_since: at,
      payment_id: 'payment_1',
      amount: { value: '1.00 NZD', formatted: '$1.00' },
      failure_reason: null,
      action_reason: null,
      revoked_by: null,
      statement_line_id: 'stline_1',
      posted_on: '2026-11-21',
      method: 'particulars',
      reconciled_at: at,
    };
    const data = (buildEventData[type] as (s: unknown) => object)(source);
    const envelope = { id: 'event_1', type, ...(versionOf(type) && { version: 1 }), created_at: at, data };
    const check = Compile(eventEnvelopeSchema(type));
    assert.equal(check.Check(envelope), true, type);
    assert.equal(check.Check({ ...envelope, data: { ...data, stray: 1 } }), false, type);
  }
});
