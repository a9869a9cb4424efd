import { test } from 'node:test';
import assert from 'node:assert/strict';
import { apiClient, buildTestApp, createTestMerchant, type TestApp } from '../../../test/helpers.ts';
import { assertError } from '../../../test/assertions.ts';
import { createApiKey, revokeApiKey } from '../merchants/merchants.service.ts';

const ID = /^request_[0-9A-HJKMNP-TV-Z]{26}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

// Spec 2.3, plus recurring_options/subscription_options/expires_at only when they apply.
const ALWAYS = [
  'id',
  'url',
  'status',
  'type',
  'message',
  'amount',
  'bank_account_id',
  'user_id',
  'merchant_identifier',
  'pcr',
  'flow',
  'qr_data',
  'logo_image_url',
  'banner_image_url',
  'min_payment_amount',
  'max_payment_amount',
  'is_test_mode',
  'is_donation',
  'add_surcharge',
  'surcharge_optional',
  'allow_dynamic_amount',
  'suggested_amounts',
  'allow_marketing_opt_in',
  'collect_customer_phone',
  'require_customer_phone',
  'require_customer_basic_info',
  'require_customer_address',
  'success_redirect_url',
  'failure_redirect_url',
  'created_at',
  'updated_at',
  'deleted_at',
];

function pngOf(dataUri: string): Buffer {
  assert.match(dataUri, /^data:image\/png;base64,[A-Za-z0-9+/]+=*$/);
  const png = Buffer.from(dataUri.slice('data:image/png;base64,'.length), 'base64');
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'PNG signature');
  assert.equal(png.subarray(12, 16).toString('latin1'), 'IHDR');
  const width = png.readUInt32BE(16);
  assert.ok(width >= 100 && width === png.readUInt32BE(20), `square QR image, got ${width}`);
  return png;
}

async function eventsOf(app: TestApp, objectId: string) {
  const rows = await app.deps.db
    .selectFrom('events')
    .selectAll()
    .where('object_id', '=', objectId)
    .orderBy('id')
    .execute();
  return rows.map((row) => ({ ...row, body: JSON.parse(row.body) }));
}

test('a fixed-amount request: every field on create, GET and the /requests alias, and its event', async (t) => {
  const app = await buildTestApp(t, { publicBaseUrl: 'https://pay.example.nz' });
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const before = Date.now();
  const created = await api.post('/v1/requests', {
    bank_account_id: merchant.bankAccountId,
    amount: '1234.50 NZD',
    message: 'Invoice 42',
    type: 'multi',
    reference: 'INV-42',
    merchant_identifier: 'order-42',
    expires_in: '2h',
    is_donation: true,
    add_surcharge: true,
    surcharge_optional: true,
    allow_marketing_opt_in: true,
    require_customer_phone: true,
    require_customer_basic_info: true,
    require_customer_address: true,
    success_redirect_url: 'https://shop.example.nz/ok',
    failure_redirect_url: 'https://shop.example.nz/fail',
    logo_image_url: 'https://shop.example.nz/logo.png',
    banner_image_url: 'https://shop.example.nz/banner.png',
  });
  assert.equal(created.status, 201, created.text);
  assert.deepEqual(Object.keys(created.body), ['request']);
  const request = created.body.request;
  assert.deepEqual(Object.keys(request).sort(), [...ALWAYS, 'expires_at'].sort());
  assert.match(request.id, ID);
  pngOf(request.qr_data);
  const { qr_data: _qr, id: _id, created_at, updated_at, expires_at, ...rest } = request;
  assert.deepEqual(rest, {
    url: `https://pay.example.nz/pay/${request.id}`,
    status: 'active',
    type: 'multi',
    message: 'Invoice 42',
    amount: { value: '1234.50 NZD', formatted: '$1234.50' },
    bank_account_id: merchant.bankAccountId,
    user_id: merchant.userId,
    merchant_identifier: 'order-42',
    pcr: { reference: 'INV-42' },
    flow: 'link',
    logo_image_url: 'https://shop.example.nz/logo.png',
    banner_image_url: 'https://shop.example.nz/banner.png',
    min_payment_amount: null,
    max_payment_amount: null,
    is_test_mode: true,
    is_donation: true,
    add_surcharge: true,
    surcharge_optional: true,
    allow_dynamic_amount: false,
    suggested_amounts: null,
    allow_marketing_opt_in: true,
    collect_customer_phone: true, // implied by require_customer_phone
    require_customer_phone: true,
    require_customer_basic_info: true,
    require_customer_address: true,
    success_redirect_url: 'https://shop.example.nz/ok',
    failure_redirect_url: 'https://shop.example.nz/fail',
    deleted_at: null,
  });
  assert.match(created_at, ISO);
  assert.equal(updated_at, created_at);
  const createdMs = Date.parse(created_at);
  assert.ok(createdMs >= before - 5 && createdMs <= Date.now() + 5);
  assert.equal(Date.parse(expires_at) - createdMs, 2 * 3600_000);

  for (const path of [`/v1/requests/${request.id}`, `/requests/${request.id}`]) {
    const got = await api.get(path);
    assert.equal(got.status, 200, got.text);
    assert.deepEqual(got.body, created.body, path);
  }

  const events = await eventsOf(app, request.id);
  assert.equal(events.length, 1);
  assert.equal(events[0].type, 'request.created');
  assert.equal(events[0].mode, 'test');
  assert.deepEqual(events[0].body.data, {
    id: request.id,
    merchant_identifier: 'order-42',
    user_id: merchant.userId,
    created_at,
    expires_at,
  });
  assert.equal(events[0].body.version, 1);
  assert.match(events[0].body.id, /^event_/);
});

test('defaults, live mode, dynamic, recurring and subscription request objects', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const live = apiClient(app, merchant.liveKey);
  const base = { bank_account_id: merchant.bankAccountId, message: 'Hello' };

  const plain = (await live.post('/v1/requests', { ...base, amount: '10.00 NZD' })).body.request;
  assert.deepEqual(Object.keys(plain).sort(), [...ALWAYS].sort(), 'no expires_at without expires_in');
  assert.equal(plain.url, `${app.deps.config.publicBaseUrl}/pay/${plain.id}`);
  assert.equal(plain.type, 'single');
  assert.equal(plain.is_test_mode, false);
  assert.deepEqual(plain.pcr, { reference: '' });
  assert.equal(plain.merchant_identifier, null);
  for (const flag of [
    'is_donation',
    'add_surcharge',
    'surcharge_optional',
    'allow_dynamic_amount',
    'allow_marketing_opt_in',
    'collect_customer_phone',
    'require_customer_phone',
    'require_customer_basic_info',
    'require_customer_address',
  ]) {
    assert.equal(plain[flag], false, flag);
  }

  const dynamic = await live.post('/v1/requests', {
    ...base,
    allow_dynamic_amount: true,
    minimum_payment_amount: 500,
    maximum_payment_amount: 20000,
    suggested_amounts: '5, 10.00 NZD,200',
  });
  assert.equal(dynamic.status, 201, dynamic.text);
  const d = dynamic.body.request;
  assert.deepEqual(
    [d.amount, d.allow_dynamic_amount, d.min_payment_amount, d.max_payment_amount, d.suggested_amounts],
    [null, true, 500, 20000, '5.00,10.00,200.00'],
  );

  const recurring = await live.post('/v1/requests', {
    ...base,
    recurring_options: {
      period: 'monthly',
      max_per_period: '300.00 NZD',
      max_per_payment: '100.00 NZD',
      total_count: 10,
      total_amount: '1000.00 NZD',
      end_date: '2040-06-30',
    },
    cust_info: { email: 'Payer@Example.com' },
  });
  assert.equal(recurring.status, 201, recurring.text);
  assert.equal(recurring.body.request.amount, null);
  // A date means the end of that day in Pacific/Auckland (NZST, UTC+12, in June).
  assert.deepEqual(recurring.body.request.recurring_options, {
    period: 'monthly',
    max_per_period: '300.00 NZD',
    max_per_payment: '100.00 NZD',
    total_count: 10,
    total_amount: '1000.00 NZD',
    end_date: '2040-06-30T11:59:59.999Z',
  });
  assert.equal(recurring.body.request.subscription_options, undefined);

  const subscription = await live.post('/v1/requests', {
    ...base,
    subscription_options: { amount: '15.00 NZD', period: 'quarterly', start_date: '2040-01-15', total_count: 4 },
    cust_info: { email: 'payer@example.com' },
  });
  assert.equal(subscription.status, 201, subscription.text);
  // 10:00 on the start date in Pacific/Auckland (NZDT, UTC+13, in January).
  assert.deepEqual(subscription.body.request.subscription_options, {
    amount: '15.00 NZD',
    period: 'quarterly',
    start_date: '2040-01-14T21:00:00.000Z',
    total_count: 4,
  });
  const got = await live.get(`/v1/requests/${subscription.body.request.id}`);
  assert.deepEqual(got.body, subscription.body);

  // A start with a time is that very instant (later charges keep its time of day), not 10:00.
  const timed = await live.post('/v1/requests', {
    ...base,
    cust_info: { email: 'pat@example.com' },
    subscription_options: { amount: '15.00 NZD', period: 'monthly', start_date: '2040-05-01T15:30+12:00' },
  });
  assert.equal(timed.status, 201, timed.text);
  assert.equal(timed.body.request.subscription_options.start_date, '2040-05-01T03:30:00.000Z');
});

test('GET /v1/requests: newest first, limit, starting_after, has_more and filters', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const ids: string[] = [];
  for (let i = 0; i < 7; i += 1) {
    const response = await api.post('/v1/requests', {
      bank_account_id: merchant.bankAccountId,
      amount: '1.00 NZD',
      message: `R${i}`,
      type: i % 2 ? 'multi' : 'single',
      merchant_identifier: i < 3 ? 'batch-a' : 'batch-b',
    });
    ids.push(response.body.request.id);
  }
  const newestFirst = [...ids].sort().reverse();
  const all = await api.get('/v1/requests');
  assert.equal(all.status, 200);
  assert.deepEqual(
    all.body.requests.map((r: any) => r.id),
    newestFirst,
  );
  assert.equal(all.body.has_more, false);

  const pages: string[] = [];
  let cursor: string | undefined;
  for (let page = 0; ; page += 1) {
    const response = await api.get('/v1/requests', {
      query: { limit: '3', ...(cursor && { starting_after: cursor }) },
    });
    assert.equal(response.status, 200, response.text);
    pages.push(...response.body.requests.map((r: any) => r.id));
    cursor = pages.at(-1);
    assert.equal(response.body.has_more, page < 2);
    if (!response.body.has_more) break;
  }
  assert.deepEqual(pages, newestFirst);

  await api.delete(`/v1/requests/${ids[0]}`);
  const byStatus = await api.get('/v1/requests', { query: { status: 'deleted' } });
  assert.deepEqual(
    byStatus.body.requests.map((r: any) => r.id),
    [ids[0]],
  );
  const byType = await api.get('/v1/requests', { query: { type: 'multi' } });
  assert.deepEqual(
    byType.body.requests.map((r: any) => r.id),
    newestFirst.filter((id) => ids.indexOf(id) % 2 === 1),
  );
  const byMid = await api.get('/v1/requests', { query: { merchant_identifier: 'batch-a', status: 'active' } });
  assert.deepEqual(
    byMid.body.requests.map((r: any) => r.id),
    [ids[2], ids[1]],
  );
  // An empty filter is a filter, never ignored: what has an empty identifier, and no event has no object.
  const blank = await api.post('/v1/requests', {
    bank_account_id: merchant.bankAccountId,
    amount: '1.00 NZD',
    message: 'Blank',
    merchant_identifier: '',
  });
  const byBlank = await api.get('/v1/requests', { query: { merchant_identifier: '' } });
  assert.deepEqual(
    byBlank.body.requests.map((r: any) => r.id),
    [blank.body.request.id],
  );
  assert.deepEqual((await api.get('/v1/events', { query: { object_id: '' } })).body.events, []);
  assert.deepEqual((await api.get('/v1/payments', { query: { request_id: '' } })).body.payments, []);

  assertError(
    await api.get('/v1/requests', { query: { limit: '0' } }),
    400,
    'bad_request.invalid_param.limit',
    'limit must be a whole number from 1 to 1000',
    { field: 'limit' },
  );
  assertError(
    await api.get('/v1/requests', { query: { limit: '1001' } }),
    400,
    'bad_request.invalid_param.limit',
    'limit must be a whole number from 1 to 1000',
    { field: 'limit' },
  );
  assertError(
    await api.get('/v1/requests', { query: { limit: 'ten' } }),
    400,
    'bad_request.invalid_param.limit',
    'limit must be a whole number from 1 to 1000',
    { field: 'limit' },
  );
  assertError(
    await api.get('/v1/requests', { query: { status: 'new' } }),
    400,
    'bad_request.invalid_param.status',
    'status must be one of "active", "paid", "expired", "deleted"',
    { field: 'status' },
  );
  assertError(
    await api.get('/v1/requests', { query: { colour: 'red' } }),
    400,
    'bad_request.unknown_param.colour',
    'colour is not a parameter of this endpoint',
    { field: 'colour' },
  );
});

test('DELETE /v1/requests/{id}: active to deleted with its event; again is 409', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const created = (
    await api.post('/v1/requests', {
      bank_account_id: merchant.bankAccountId,
      amount: '5.00 NZD',
      message: 'Bye',
      merchant_identifier: 'm-1',
    })
  ).body.request;
  const deleted = await api.delete(`/v1/requests/${created.id}`);
  assert.equal(deleted.status, 200, deleted.text);
  const request = deleted.body.request;
  assert.equal(request.status, 'deleted');
  assert.match(request.deleted_at, ISO);
  assert.equal(request.updated_at, request.deleted_at);
  assert.deepEqual({ ...request, status: 'active', deleted_at: null, updated_at: created.updated_at }, created);
  assert.deepEqual((await api.get(`/v1/requests/${created.id}`)).body, deleted.body);

  const events = await eventsOf(app, created.id);
  assert.deepEqual(
    events.map((e) => e.type),
    ['request.created', 'request.status_updated'],
  );
  assert.deepEqual(events[1].body.data, {
    id: created.id,
    user_id: merchant.userId,
    merchant_identifier: 'm-1',
    status: 'deleted',
    updated_at: request.deleted_at,
  });
  assert.equal('version' in events[1].body, false, 'request.status_updated carries no version');

  const again = await api.delete(`/v1/requests/${created.id}`);
  assert.equal(again.status, 200, 'a repeated delete answers with the request as it is');
  assert.deepEqual(again.body, deleted.body);
  assert.equal((await eventsOf(app, created.id)).length, 2, 'a repeated delete writes no event');
  assertError(
    await api.delete('/v1/requests/request_01JD2Q8Z7M3V4K5N6P7R8S9T0V'),
    404,
    'not_found.request',
    'No such request: request_01JD2Q8Z7M3V4K5N6P7R8S9T0V',
    { id: 'request_01JD2Q8Z7M3V4K5N6P7R8S9T0V' },
  );
});

test('isolation: mode and merchant; other objects are 404, never 403', async (t) => {
  const app = await buildTestApp(t);
  const alice = await createTestMerchant(app, 'Alice');
  const bob = await createTestMerchant(app, 'Bob');
  const make = async (key: string, bankAccountId: string) =>
    (
      await apiClient(app, key).post('/v1/requests', {
        bank_account_id: bankAccountId,
        amount: '3.00 NZD',
        message: 'x',
      })
    ).body.request.id as string;
  const aliceTest = await make(alice.testKey, alice.bankAccountId);
  const aliceLive = await make(alice.liveKey, alice.bankAccountId);
  const bobTest = await make(bob.testKey, bob.bankAccountId);

  const notFound = (id: string) => [404, 'not_found.request', `No such request: ${id}`, { id }] as const;
  const check = async (key: string, own: string, others: string[]) => {
    const api = apiClient(app, key);
    assert.equal((await api.get(`/v1/requests/${own}`)).status, 200);
    assert.deepEqual(
      (await api.get('/v1/requests')).body.requests.map((r: any) => r.id),
      [own],
    );
    for (const id of others) {
      for (const path of [`/v1/requests/${id}`, `/requests/${id}`]) assertError(await api.get(path), ...notFound(id));
      assertError(await api.delete(`/v1/requests/${id}`), ...notFound(id));
    }
  };
  await check(alice.testKey, aliceTest, [aliceLive, bobTest]);
  await check(alice.liveKey, aliceLive, [aliceTest, bobTest]);
  await check(bob.testKey, bobTest, [aliceTest, aliceLive]);
  const rows = await app.deps.db.selectFrom('requests').select(['id', 'status']).execute();
  assert.ok(
    rows.every((row) => row.status === 'active'),
    'no cross-merchant delete happened',
  );
  assertError(await apiClient(app, alice.testKey).get('/v1/requests/nonsense'), ...notFound('nonsense'));
});

test('auth: missing, malformed, unknown and revoked keys are 401 on every requests endpoint', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const created = (
    await apiClient(app, merchant.testKey).post('/v1/requests', {
      bank_account_id: merchant.bankAccountId,
      amount: '1.00 NZD',
      message: 'x',
    })
  ).body.request;
  const endpoints: Array<['GET' | 'POST' | 'DELETE', string]> = [
    ['POST', '/v1/requests'],
    ['GET', '/v1/requests'],
    ['GET', `/v1/requests/${created.id}`],
    ['GET', `/requests/${created.id}`],
    ['DELETE', `/v1/requests/${created.id}`],
  ];
  const call = async (method: 'GET' | 'POST' | 'DELETE', url: string, authorization?: string) => {
    const response = await app.app.inject({
      method,
      url,
      headers: {
        ...(authorization !== undefined && { authorization }),
        ...(method === 'POST' && { 'content-type': 'application/json' }),
      },
      ...(method === 'POST' && { payload: '{not json' }),
    });
    return { status: response.statusCode, body: response.json(), text: response.body };
  };
  const malformed = 'Malformed Authorization header: send Authorization: Bearer <API key>';
  const unknown = 'Unknown or revoked API key';
  const revoked = await createApiKey(
    app.deps.db,
    app.deps.clock,
    merchant.userId,
    'test',
    {},
    { actor: { kind: 'operator', name: 'test' } },
  );
  await revokeApiKey(app.deps.db, app.deps.clock, revoked.id, { actor: { kind: 'operator', name: 'test' } });
  const revokedKey = revoked.key;
  const cases: Array<[string | undefined, string]> = [
    [undefined, 'Missing Authorization header: send Authorization: Bearer <API key>'],
    ['', 'Missing Authorization header: send Authorization: Bearer <API key>'],
    [merchant.testKey, malformed],
    [`Basic ${merchant.testKey}`, malformed],
    [`Bearer ${merchant.testKey} extra`, malformed],
    ['Bearer', malformed],
    ['Bearer sk_test_short', unknown],
    [`Bearer ${merchant.testKey.replace('sk_test_', 'sk_live_')}`, unknown],
    [`Bearer sk_test_${'A'.repeat(32)}`, unknown],
    [`Bearer ${merchant.testKey}x`, unknown],
    [`Bearer ${revokedKey}`, unknown],
  ];
  for (const [method, url] of endpoints) {
    for (const [authorization, message] of cases) {
      assertError(await call(method, url, authorization), 401, 'unauthorized', message);
    }
  }
  // the scheme is case-insensitive
  assert.equal(
    (
      await app.app.inject({
        method: 'GET',
        url: '/v1/requests',
        headers: { authorization: `bearer ${merchant.testKey}` },
      })
    ).statusCode,
    200,
  );
  assert.equal(
    (await app.app.inject({ method: 'GET', url: '/v1/requests', headers: { authorization: `Bearer ${revokedKey}` } }))
      .statusCode,
    401,
  );
  const rows = await app.deps.db.selectFrom('requests').select('status').execute();
  assert.deepEqual(
    rows.map((row) => row.status),
    ['active'],
  );
});

test('Idempotency-Key on POST /v1/requests', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const body = { bank_account_id: merchant.bankAccountId, amount: '20.00 NZD', message: 'Once', expires_in: '1d' };
  const headers = { 'idempotency-key': 'order-1001' };

  const first = await api.post('/v1/requests', body, { headers });
  assert.equal(first.status, 201, first.text);
  assert.equal(first.headers['idempotent-replayed'], undefined);
  const again = await api.post('/v1/requests', body, { headers });
  assert.equal(again.status, 200, again.text);
  assert.equal(again.headers['idempotent-replayed'], 'true');
  assert.deepEqual(again.body, first.body);
  // the same JSON with its keys in another order and other whitespace is the same request
  const reordered = `{ "expires_in": "1d",\n  "message": "Once", "amount": "20.00 NZD", "bank_account_id": "${merchant.bankAccountId}" }`;
  const replayed = await api.post('/v1/requests', reordered, { headers });
  assert.equal(replayed.status, 200, replayed.text);
  assert.deepEqual(replayed.body, first.body);

  assertError(
    await api.post('/v1/requests', { ...body, amount: '21.00 NZD' }, { headers }),
    409,
    'conflict.idempotency_key_reused',
    'This Idempotency-Key was used with a different request',
    { idempotency_key: 'order-1001' },
  );
  // the key is per merchant and mode: the live key may use it for its own request
  const live = await apiClient(app, merchant.liveKey).post('/v1/requests', body, { headers });
  assert.equal(live.status, 201, live.text);
  assert.notEqual(live.body.request.id, first.body.request.id);

  // concurrent duplicates create exactly one request
  const concurrentHeaders = { 'idempotency-key': 'burst-7' };
  const burst = await Promise.all(
    Array.from({ length: 8 }, () =>
      api.post('/v1/requests', { ...body, message: 'Burst' }, { headers: concurrentHeaders }),
    ),
  );
  assert.deepEqual(burst.map((r) => r.status).sort(), [200, 200, 200, 200, 200, 200, 200, 201]);
  assert.equal(new Set(burst.map((r) => r.body.request.id)).size, 1);

  const rows = await app.deps.db
    .selectFrom('requests')
    .select('id')
    .where('user_id', '=', merchant.userId)
    .where('mode', '=', 'test')
    .execute();
  assert.equal(rows.length, 2);
  const events = await app.deps.db
    .selectFrom('events')
    .select('object_id')
    .where('user_id', '=', merchant.userId)
    .where('mode', '=', 'test')
    .execute();
  assert.equal(events.length, 2);
  const jobs = await app.deps.db.selectFrom('jobs').select('id').where('kind', '=', 'request.expire').execute();
  assert.equal(jobs.length, 3);

  // A day on, on the merchant's test clock, the key has expired: it is taken for a new request, even
  // with another body, and replays that one from then on.
  assert.equal((await api.post('/v1/test-helpers/clock/advance', { seconds: 86_400 })).status, 200);
  const renewed = await api.post('/v1/requests', { ...body, amount: '21.00 NZD' }, { headers });
  assert.equal(renewed.status, 201, renewed.text);
  assert.notEqual(renewed.body.request.id, first.body.request.id);
  const renewedAgain = await api.post('/v1/requests', { ...body, amount: '21.00 NZD' }, { headers });
  assert.equal(renewedAgain.status, 200, renewedAgain.text);
  assert.deepEqual(renewedAgain.body, renewed.body);
  assertError(
    await api.post('/v1/requests', body, { headers }),
    409,
    'conflict.idempotency_key_reused',
    'This Idempotency-Key was used with a different request',
    { idempotency_key: 'order-1001' },
  );

  assertError(
    await api.post('/v1/requests', body, { headers: { 'idempotency-key': 'k'.repeat(256) } }),
    400,
    'bad_request.invalid_param.idempotency-key',
    'idempotency-key must be at most 255 characters',
    { field: 'idempotency-key' },
  );

  // A retry after its times have passed (a timeout, then the test clock moved on) still answers with
  // the request it made, not a refusal of a time now in the past; without the key it is refused.
  const clockNow = Date.parse((await api.get('/v1/test-helpers/clock')).body.clock.now);
  const ending = {
    bank_account_id: merchant.bankAccountId,
    message: 'Weekly veg box',
    recurring_options: {
      period: 'weekly',
      max_per_period: '50.00 NZD',
      end_date: new Date(clockNow + 60 * 60_000).toISOString(),
    },
    cust_info: { email: 'aroha@example.com' },
  };
  const made = await api.post('/v1/requests', ending, { headers: { 'idempotency-key': 'veg-1' } });
  assert.equal(made.status, 201, made.text);
  assert.equal((await api.post('/v1/test-helpers/clock/advance', { seconds: 2 * 60 * 60 })).status, 200);
  const retried = await api.post('/v1/requests', ending, { headers: { 'idempotency-key': 'veg-1' } });
  assert.equal(retried.status, 200, retried.text);
  assert.deepEqual(retried.body, made.body);
  const fresh = await api.post('/v1/requests', ending, { headers: { 'idempotency-key': 'veg-2' } });
  assert.equal(fresh.status, 400, fresh.text);
  assert.equal(fresh.body.code, 'bad_request.invalid_param.recurring_options.end_date');
  const replayOfRefusal = await api.post('/v1/requests', ending, { headers: { 'idempotency-key': 'veg-2' } });
  assert.equal(replayOfRefusal.status, 400, 'a refusal stores nothing under its key');
});

test('a request for a recurring consent or a subscription expires at its end_date at the latest', async (t) => {
  const app = await buildTestApp(t, { publicBaseUrl: 'https://pay.example.nz' });
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const clockNow = Date.parse((await api.get('/v1/test-helpers/clock')).body.clock.now);
  const endDate = new Date(clockNow + 2 * 86_400_000).toISOString();
  const recurring = await api.post('/v1/requests', {
    bank_account_id: merchant.bankAccountId,
    message: 'Firewood',
    recurring_options: { period: 'daily', max_per_period: '15.00 NZD', end_date: endDate },
    cust_info: { email: 'aroha@example.com' },
  });
  const subscription = await api.post('/v1/requests', {
    bank_account_id: merchant.bankAccountId,
    message: 'Veg box',
    expires_in: '30d',
    subscription_options: { amount: '15.00 NZD', period: 'weekly', end_date: endDate },
    cust_info: { email: 'aroha@example.com' },
  });
  const later = await api.post('/v1/requests', {
    bank_account_id: merchant.bankAccountId,
    message: 'Milk',
    expires_in: '1d',
    recurring_options: { period: 'daily', max_per_period: '15.00 NZD', end_date: endDate },
    cust_info: { email: 'aroha@example.com' },
  });
  for (const made of [recurring, subscription, later]) assert.equal(made.status, 201, made.text);
  assert.equal(recurring.body.request.expires_at, endDate, 'no expires_in: the end_date');
  assert.equal(subscription.body.request.expires_at, endDate, 'the earlier of the two');
  assert.equal(
    later.body.request.expires_at,
    new Date(Date.parse(later.body.request.created_at) + 86_400_000).toISOString(),
    'expires_in, when it comes first',
  );

  assert.equal((await api.post('/v1/test-helpers/clock/advance', { seconds: 3 * 86_400 })).status, 200);
  for (const made of [recurring, subscription]) {
    const id = made.body.request.id;
    assert.equal((await api.get(`/v1/requests/${id}`)).body.request.status, 'expired');
    const paid = await api.post(`/v1/test-helpers/requests/${id}/pay`, {});
    assert.equal(paid.status, 409, paid.text);
    const page = await app.app.inject({ method: 'GET', url: `/pay/${id}` });
    assert.match(page.body, /expired/i, 'the page says so');
    assert.doesNotMatch(page.body, /Continue to your bank/);
    const events = await app.deps.db
      .selectFrom('events')
      .select('type')
      .where('object_id', '=', id)
      .orderBy('id')
      .execute();
    assert.deepEqual(
      events.map((e) => e.type),
      ['request.created', 'request.expired'],
    );
  }
});
