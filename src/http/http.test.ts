import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { Ajv2020 } from 'ajv/dist/2020.js';
import pino from 'pino';
import { createRuntime } from '../runtime.ts';
import { loggerRedactPaths } from '../app.ts';
import { apiKeyAuth } from '../modules/merchants/merchants.auth.ts';
import { apiClient, buildTestApp, createTestMerchant, freshDb, testConfig } from '../../test/helpers.ts';
import { assertError } from '../../test/assertions.ts';

test('/healthz, /readyz, and readyz reports a lost database', async (t) => {
  const app = await buildTestApp(t);
  const health = await app.app.inject({ method: 'GET', url: '/healthz' });
  assert.deepEqual([health.statusCode, health.json()], [200, { status: 'ok' }]);
  const ready = await app.app.inject({ method: 'GET', url: '/readyz' });
  assert.deepEqual([ready.statusCode, ready.json()], [200, { status: 'ready' }]);
  await app.deps.db.destroy();
  const lost = await app.app.inject({ method: 'GET', url: '/readyz' });
  assert.deepEqual(
    [lost.statusCode, lost.json()],
    [503, { code: 'service_unavailable', message: 'The database is not reachable', params: {} }],
  );
});

test('/v1/openapi.json is an OpenAPI 3.1 document of the requests endpoints; /docs serves a page', async (t) => {
  const app = await buildTestApp(t);
  const response = await app.app.inject({ method: 'GET', url: '/v1/openapi.json' });
  assert.equal(response.statusCode, 200);
  assert.match(String(response.headers['content-type']), /^application\/json/);
  const doc = response.json();
  assert.equal(doc.openapi, '3.1.0');
  assert.equal(typeof doc.info.title, 'string');
  assert.equal(typeof doc.info.version, 'string');
  assert.deepEqual(doc.components.securitySchemes.bearer, {
    type: 'http',
    scheme: 'bearer',
    description: 'sk_live_… or sk_test_…',
  });

  const operations = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => ['get', 'post', 'put', 'delete', 'patch'].includes(method))
      .map(([method, op]) => ({ path, method, op })),
  );
  const find = (method: string, path: string) => operations.find((o) => o.method === method && o.path === path)?.op;
  for (const [method, path] of [
    ['post', '/v1/requests'],
    ['get', '/v1/requests'],
    ['get', '/v1/requests/{id}'],
    ['delete', '/v1/requests/{id}'],
    ['get', '/v1/test-helpers/clock'],
    ['post', '/v1/test-helpers/clock/advance'],
    ['get', '/v1/bank-accounts'],
  ]) {
    assert.ok(find(method, path), `${method} ${path} documented`);
  }
  assert.equal(find('get', '/requests/{id}'), undefined, 'the alias is hidden');
  assert.equal(find('get', '/healthz'), undefined);

  const create = find('post', '/v1/requests');
  const named = (schema: any) => (schema.$ref ? doc.components.schemas[schema.$ref.split('/').pop()] : schema);
  const body = named(create.requestBody.content['application/json'].schema);
  assert.deepEqual(body.required, ['bank_account_id', 'message']);
  assert.equal(body.additionalProperties, false);
  assert.equal(body.properties.amount.pattern, '^(0|[1-9][0-9]*)\\.[0-9]{2} NZD$');
  assert.deepEqual(Object.keys(named(body.properties.recurring_options).properties).sort(), [
    'end_date',
    'max_per_payment',
    'max_per_period',
    'period',
    'total_amount',
    'total_count',
  ]);
  assert.deepEqual(Object.keys(create.responses).sort(), [
    '200',
    '201',
    '400',
    '401',
    '403',
    '409',
    '413',
    '415',
    '429',
    '500',
  ]);
  const created = create.responses['201'].content['application/json'].schema;
  assert.ok(named(created.properties.request).properties.qr_data);
  assert.deepEqual(Object.keys(named(create.responses['400'].content['application/json'].schema.allOf[0]).properties), [
    'code',
    'message',
    'params',
  ]);
  assert.ok(create.parameters.some((p: any) => p.in === 'header' && p.name === 'idempotency-key'));
  const getOne = find('get', '/v1/requests/{id}');
  assert.ok(getOne.parameters.some((p: any) => p.in === 'path' && p.name === 'id' && p.required === true));
  const list = find('get', '/v1/requests');
  assert.deepEqual(
    list.parameters
      .filter((p: any) => p.in === 'query')
      .map((p: any) => p.name)
      .sort(),
    ['limit', 'merchant_identifier', 'starting_after', 'status', 'type'],
  );

  // every schema is a valid JSON Schema 2020-12 (the OpenAPI 3.1 dialect), and every $ref resolves
  const ajv = new Ajv2020({ strict: false, validateFormats: false });
  ajv.addKeyword('x-expected');
  const schemas: unknown[] = [];
  const refs: string[] = [];
  const walk = (node: unknown, key?: string) => {
    if (Array.isArray(node)) {
      for (const n of node) walk(n);
      return;
    }
    if (!node || typeof node !== 'object') return;
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') refs.push(v);
      if (k === 'schema' && key !== 'properties') schemas.push(v);
      walk(v, k);
    }
  };
  walk(doc.paths);
  assert.ok(schemas.length > 20);
  for (const schema of schemas)
    assert.doesNotThrow(() => ajv.compile({ ...(schema as object), components: doc.components }));
  for (const ref of refs) {
    const target = ref
      .replace(/^#\//, '')
      .split('/')
      .reduce((node: any, part) => node?.[part], doc);
    assert.ok(target, `${ref} resolves`);
  }

  const docs = await app.app.inject({ method: 'GET', url: '/docs' });
  const page =
    docs.statusCode === 302
      ? await app.app.inject({ method: 'GET', url: String(docs.headers.location).replace(/^\.\//, '/docs/') })
      : docs;
  assert.equal(page.statusCode, 200);
  assert.match(String(page.headers['content-type']), /^text\/html/);
  assert.match(page.body, /<html/i);
});

test('x-request-id is echoed (or made up when absent or unusable); unknown routes are 404 in the error shape', async (t) => {
  const app = await buildTestApp(t);
  const echoed = await app.app.inject({
    method: 'GET',
    url: '/healthz',
    headers: { 'x-request-id': 'trace-123.abc_X' },
  });
  assert.equal(echoed.headers['x-request-id'], 'trace-123.abc_X');
  const made = await app.app.inject({ method: 'GET', url: '/healthz' });
  assert.match(String(made.headers['x-request-id']), /^[0-9a-f-]{36}$/);
  const unusable = await app.app.inject({
    method: 'GET',
    url: '/healthz',
    headers: { 'x-request-id': 'has spaces and\u00e9' },
  });
  assert.match(String(unusable.headers['x-request-id']), /^[0-9a-f-]{36}$/);
  const onError = await app.app.inject({ method: 'GET', url: '/v1/requests', headers: { 'x-request-id': 'err-1' } });
  assert.equal(onError.headers['x-request-id'], 'err-1');
  assert.equal(onError.statusCode, 401);

  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  assertError(await api.get('/v1/nothing-here?x=1'), 404, 'not_found.route', 'No route GET /v1/nothing-here');
  assertError(await api.post('/nothing', {}), 404, 'not_found.route', 'No route POST /nothing');
  assertError(await api.put('/v1/requests', {}), 404, 'not_found.route', 'No route PUT /v1/requests');
  assertError(
    await api.get('/v1/requests/%E0%A4%A'),
    400,
    'bad_request.invalid_url',
    'The URL is not valid: check its percent-encoding',
  );
  assertError(
    await api.get('/v1/requests/req%00uest'),
    400,
    'bad_request.invalid_param.id',
    'id must not contain NUL (\\u0000) characters',
    { field: 'id' },
  );
  assertError(
    await api.get('/v1/requests?merchant_identifier=a%00b'),
    400,
    'bad_request.invalid_param.merchant_identifier',
    'merchant_identifier must not contain NUL (\\u0000) characters',
    { field: 'merchant_identifier' },
  );
});

test('logs carry the request id and never an API key; an unexpected failure is a logged 500', async (t) => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  const log = pino({ level: 'trace', redact: { paths: loggerRedactPaths, censor: '[redacted]' } }, sink);
  const testDb = await freshDb();
  const runtime = await createRuntime(testConfig({ workers: false }), { db: testDb.db, log });
  t.after(async () => {
    await runtime.close();
    await testDb.drop();
  });
  runtime.app.get('/v1/boom', { preHandler: apiKeyAuth(runtime.deps) }, async () => {
    throw new Error('kaboom');
  });
  const merchant = await createTestMerchant(runtime);
  const api = apiClient(runtime, merchant.testKey);
  await api.post(
    '/v1/requests',
    { bank_account_id: merchant.bankAccountId, amount: '1.00 NZD', message: 'Logged' },
    { headers: { 'x-request-id': 'log-test-1' } },
  );
  await api.get('/v1/requests', { headers: { 'x-request-id': 'log-test-2' } });
  await apiClient(runtime, `${merchant.liveKey}x`).get('/v1/requests');
  const boom = await api.get('/v1/boom', { headers: { 'x-request-id': 'log-test-3' } });
  await runtime.app.inject({ method: 'GET', url: '/pay/return?state=unknown-state&code=one-time-bank-code' });
  assertError(boom, 500, 'internal_error', 'Something went wrong on our side; the request id is in the logs', {
    request_id: 'log-test-3',
  });
  log.info(
    {
      req: { headers: { authorization: `Bearer ${merchant.testKey}` } },
      body: { token: 'secret-token' },
      created: { live_key: merchant.liveKey },
    },
    'direct',
  );

  const all = lines.join('\n');
  for (const secret of [
    merchant.testKey,
    merchant.liveKey,
    merchant.testKey.slice(8),
    'secret-token',
    'one-time-bank-code',
  ]) {
    assert.equal(all.includes(secret), false, `a secret reached the logs: ${secret.slice(0, 12)}…`);
  }
  const entries = lines.map((line) => JSON.parse(line));
  assert.ok(
    entries.some((e) => e.reqId === 'log-test-1'),
    'request id in the logs',
  );
  const failure = entries.find((e) => e.reqId === 'log-test-3' && e.level === 50);
  assert.ok(failure, 'the 500 is logged as an error with its request id');
  assert.equal(failure.err.message, 'kaboom');
  assert.deepEqual(
    [failure.merchant_id, failure.mode],
    [merchant.userId, 'test'],
    'with the merchant the API key named',
  );
  const direct = entries.find((e) => e.msg === 'direct');
  assert.deepEqual(
    [direct.req.headers.authorization, direct.body.token, direct.created.live_key],
    ['[redacted]', '[redacted]', '[redacted]'],
  );
  // One access line per call, once it is answered: who asked for what, and how it went.
  const access = entries.filter(
    (e) => e.reqId === 'log-test-2' && (e.msg === 'request completed' || e.msg === 'incoming request'),
  );
  assert.equal(access.length, 1);
  assert.equal(access[0].msg, 'request completed');
  assert.equal(access[0].level, 30);
  assert.deepEqual([access[0].req.method, access[0].req.url], ['GET', '/v1/requests']);
  assert.deepEqual(access[0].res, { statusCode: 200 });
  assert.equal(typeof access[0].responseTime, 'number');
  assert.equal(access[0].merchant_id, merchant.userId, 'with the merchant who called');
});

test('a query parameter given twice is refused as repeated, whichever values it has; a number as digits only', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const twice = await api.get('/v1/requests?status=paid&status=active');
  assert.deepEqual([twice.status, twice.body.code], [400, 'bad_request.invalid_param.status']);
  assert.equal(twice.body.message, 'status must be given once, not repeated');
  const limits = await api.get('/v1/payments?limit=5&limit=6');
  assert.deepEqual([limits.status, limits.body.code], [400, 'bad_request.invalid_param.limit']);
  assert.equal((await api.get('/v1/requests?status=paid&limit=5')).status, 200);
  const hex = await api.get('/v1/payments?limit=0x10');
  assert.deepEqual([hex.status, hex.body.code], [400, 'bad_request.invalid_param.limit']);
});
