import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { localDateAt } from '../shared/zone.ts';
import { apiClient, buildTestApp, createTestMerchant, type TestApp } from '../../test/helpers.ts';
import { statementFile } from '../../test/support/statements.ts';

// Real error replies against the published document (/v1/openapi.json, the same as
// docs/openapi.json): the reply's status is a response of its operation, and its body, `code`
// included, is valid against that response's schema. The typed client's `error.code` is made
// from these schemas, so a code the API answers but the document leaves out is a wrong type there.

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
type Reply = { statusCode: number; body: string };
type Operation = { method: Method; path: string; operation: any };

async function documentOf(app: TestApp) {
  const document = (await app.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
  const operations: Operation[] = Object.entries(document.paths as Record<string, Record<string, any>>).flatMap(
    ([path, item]) =>
      Object.entries(item).map(([method, operation]) => ({ method: method.toUpperCase() as Method, path, operation })),
  );
  const ajv = new Ajv2020({ strict: false, validateFormats: false });
  ajv.addKeyword('x-expected');
  const compiled = new Map<string, ValidateFunction>();
  /** Why the reply is not what the document says of this operation, or null when it is. */
  const mismatch = (method: Method, path: string, reply: Reply): string | null => {
    const operation = document.paths[path]?.[method.toLowerCase()];
    if (!operation) return `${method} ${path} is not in the document`;
    const where = `${method} ${path} answered ${reply.statusCode} ${reply.body.slice(0, 200)}`;
    const response = operation.responses[String(reply.statusCode)];
    if (!response) return `${where}: the document lists only ${Object.keys(operation.responses).join(', ')}`;
    if (reply.statusCode < 400) return null;
    const key = `${method} ${path} ${reply.statusCode}`;
    let validate = compiled.get(key);
    if (!validate) {
      validate = ajv.compile({ ...response.content['application/json'].schema, components: document.components });
      compiled.set(key, validate);
    }
    return validate(JSON.parse(reply.body)) ? null : `${where}: ${ajv.errorsText(validate.errors)}`;
  };
  return { document, operations, mismatch };
}

/** Asserts every reply matches the document, listing all that do not at once. */
function assertConforms(problems: Array<string | null>): void {
  const found = problems.filter((problem) => problem !== null);
  assert.ok(found.length === 0, `${found.length} replies the document does not describe:\n${found.join('\n')}`);
}

test('the error codes the API answers for missing objects and its own rules are documented for their operation', async (t) => {
  // No live bank: a live request is refused with conflict.no_live_bank; test mode has the sandbox bank.
  const app = await buildTestApp(t, { banksFile: null });
  const { mismatch } = await documentOf(app);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const missing = (type: string) => `${type}_01JD2Q8Z7M3V4K5N6P7R8S9T0V`;
  const problems: Array<string | null> = [];
  const expect = async (
    method: Method,
    path: string,
    url: string,
    body: unknown,
    status: number,
    code: string,
    key = merchant.testKey,
    headers: Record<string, string> = {},
  ) => {
    const reply = await app.app.inject({
      method,
      url,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body !== undefined && { 'content-type': 'application/json' }),
        ...headers,
      },
      payload: body === undefined ? undefined : JSON.stringify(body),
    });
    assert.deepEqual(
      [reply.statusCode, reply.json().code],
      [status, code],
      `${method} ${url}: ${reply.body.slice(0, 300)}`,
    );
    problems.push(mismatch(method, path, reply));
  };

  const request = (
    await api.post('/v1/requests', { bank_account_id: merchant.bankAccountId, amount: '5.00 NZD', message: 'Docs' })
  ).body.request;
  const dynamic = (
    await api.post('/v1/requests', {
      bank_account_id: merchant.bankAccountId,
      allow_dynamic_amount: true,
      message: 'Any amount',
    })
  ).body.request;
  const detailed = (
    await api.post('/v1/requests', {
      bank_account_id: merchant.bankAccountId,
      amount: '5.00 NZD',
      message: 'With details',
      require_customer_basic_info: true,
    })
  ).body.request;
  assert.ok(request && dynamic && detailed);
  const event = (await api.get('/v1/events')).body.events[0];
  const today = localDateAt(app.deps.clock.now(), app.deps.config.serviceTimeZone);
  const imported = await api.post('/v1/statements', {
    content: statementFile('anz', { p1: 'P1', r1: 'R1', r2: 'R2', today }),
  });
  assert.equal(imported.status, 201, imported.text);
  const line = (await api.get('/v1/statement-lines')).body.statement_lines[0];

  // objects in the path
  await expect('GET', '/v1/refunds/{id}', `/v1/refunds/${missing('refund')}`, undefined, 404, 'not_found.refund');
  await expect('GET', '/v1/statements/{id}', '/v1/statements/statement_x', undefined, 404, 'not_found.statement');
  await expect(
    'GET',
    '/v1/statement-lines/{id}',
    '/v1/statement-lines/stline_x',
    undefined,
    404,
    'not_found.statement_line',
  );
  await expect(
    'POST',
    '/v1/statement-lines/{id}/match',
    '/v1/statement-lines/stline_x/match',
    { payment_id: missing('payment') },
    404,
    'not_found.statement_line',
  );
  await expect(
    'POST',
    '/v1/statement-lines/{id}/unmatch',
    '/v1/statement-lines/stline_x/unmatch',
    undefined,
    404,
    'not_found.statement_line',
  );
  // objects named in the body
  await expect(
    'POST',
    '/v1/statement-lines/{id}/match',
    `/v1/statement-lines/${line.id}/match`,
    { payment_id: missing('payment') },
    404,
    'not_found.payment',
  );
  await expect(
    'POST',
    '/v1/statement-lines/{id}/match',
    `/v1/statement-lines/${line.id}/match`,
    { refund_id: missing('refund') },
    404,
    'not_found.refund',
  );
  await expect('POST', '/v1/refunds', '/v1/refunds', { payment_id: missing('payment') }, 404, 'not_found.payment');
  await expect(
    'POST',
    '/v1/payments',
    '/v1/payments',
    { token: 'rct_unknown', amount: '1.00 NZD', idempotency_key: 'charge-1' },
    404,
    'not_found.recurring_consent',
  );
  await expect(
    'POST',
    '/v1/events/{id}/resend',
    `/v1/events/${event.id}/resend`,
    { webhook_id: missing('webhook') },
    404,
    'not_found.webhook',
  );
  // the services' own rules
  await expect(
    'POST',
    '/v1/test-helpers/requests/{id}/pay',
    `/v1/test-helpers/requests/${dynamic.id}/pay`,
    {},
    400,
    'bad_request.missing_param.amount',
  );
  await expect(
    'POST',
    '/v1/test-helpers/requests/{id}/pay',
    `/v1/test-helpers/requests/${detailed.id}/pay`,
    {},
    400,
    'bad_request.missing_param.cust_info.email',
  );
  await expect(
    'POST',
    '/v1/requests',
    '/v1/requests',
    { bank_account_id: merchant.bankAccountId, amount: '5.00 NZD', message: 'Live' },
    409,
    'conflict.no_live_bank',
    merchant.liveKey,
  );
  // headers, query-string and body names as sent
  await expect(
    'POST',
    '/v1/webhooks',
    '/v1/webhooks',
    { url: 'http://localhost:9/hooks' },
    400,
    'bad_request.invalid_param.idempotency-key',
    merchant.testKey,
    { 'idempotency-key': 'k'.repeat(256) },
  );
  await expect(
    'GET',
    '/v1/requests',
    '/v1/requests?status[]=paid',
    undefined,
    400,
    'bad_request.unknown_param.status[]',
  );
  await expect(
    'POST',
    '/v1/webhooks',
    '/v1/webhooks',
    { url: 'http://localhost:9/hooks', 'Event Types': [] },
    400,
    'bad_request.unknown_param.Event Types',
  );
  await expect(
    'POST',
    '/v1/webhooks',
    '/v1/webhooks',
    { url: 'http://localhost:9/hooks', events: ['request.created', 1] },
    400,
    'bad_request.invalid_param.events.1',
  );
  await expect('GET', '/v1/requests', '/v1/requests?=1', undefined, 400, 'bad_request.unknown_param.');
  await expect('GET', '/v1/requests/{id}', '/v1/requests/%E0%A4%A', undefined, 400, 'bad_request.invalid_url');
  assertConforms(problems);
});

test('every operation: a missing object, a broken path, a body of another type or too large, as its document says', async (t) => {
  const app = await buildTestApp(t);
  const { operations, mismatch } = await documentOf(app);
  const merchant = await createTestMerchant(app);
  const problems: Array<string | null> = [];
  const call = async (operation: Operation, url: string, headers: Record<string, string> = {}, payload?: string) => {
    const reply = await app.app.inject({
      method: operation.method,
      url,
      headers: { authorization: `Bearer ${merchant.testKey}`, ...headers },
      ...(payload !== undefined && { payload }),
    });
    problems.push(mismatch(operation.method, operation.path, reply));
    return reply;
  };
  const takesBody = (operation: Operation) => operation.method !== 'GET';
  // over every operation's limit, the statement import's 4.2 MB included
  const tooLarge = JSON.stringify({ padding: 'x'.repeat(4_300_000) });
  for (const operation of operations) {
    const url = operation.path.replace('{id}', 'x_01JD2Q8Z7M3V4K5N6P7R8S9T0V');
    const json = { 'content-type': 'application/json' };
    // an object that is not there (or whatever the empty body gets first: it is documented too)
    await call(
      operation,
      url,
      operation.operation.requestBody ? json : {},
      operation.operation.requestBody ? '{}' : undefined,
    );
    if (operation.path.includes('{id}')) {
      const broken = await call(operation, operation.path.replace('{id}', '%E0%A4%A'));
      assert.equal(broken.json().code, 'bad_request.invalid_url', `${operation.method} ${operation.path}`);
    }
    if (!takesBody(operation)) continue;
    const text = await call(operation, url, { 'content-type': 'text/plain' }, 'hello');
    assert.equal(text.json().code, 'unsupported_media_type', `${operation.method} ${operation.path}: ${text.body}`);
    const large = await call(operation, url, json, tooLarge);
    assert.equal(large.json().code, 'payload_too_large', `${operation.method} ${operation.path}: ${large.body}`);
  }
  assertConforms(problems);
});

test('every operation: 429 when the key is over its rate, 500 on a fault, as its document says', async (t) => {
  // A bucket that never holds a whole call: every call is over the rate, however slowly the test runs.
  const app = await buildTestApp(t, { rateLimitPerSecond: 0.001 });
  const { operations, mismatch } = await documentOf(app);
  const merchant = await createTestMerchant(app);
  const problems: Array<string | null> = [];
  const call = async (operation: Operation) => {
    const reply = await app.app.inject({
      method: operation.method,
      url: operation.path.replace('{id}', 'x'),
      headers: { authorization: `Bearer ${merchant.testKey}` },
    });
    problems.push(mismatch(operation.method, operation.path, reply));
    return reply;
  };
  for (const operation of operations) {
    const reply = await call(operation);
    assert.equal(reply.json().code, 'rate_limited', `${operation.method} ${operation.path}: ${reply.body}`);
  }
  // A fault on our side: the database is gone.
  const faulty = await buildTestApp(t);
  const other = await createTestMerchant(faulty);
  await faulty.deps.db.destroy();
  for (const operation of operations) {
    const reply = await faulty.app.inject({
      method: operation.method,
      url: operation.path.replace('{id}', 'x'),
      headers: { authorization: `Bearer ${other.testKey}` },
    });
    assert.equal(reply.json().code, 'internal_error', `${operation.method} ${operation.path}: ${reply.body}`);
    problems.push(mismatch(operation.method, operation.path, reply));
  }
  assertConforms(problems);
});
