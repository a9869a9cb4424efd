import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { apiClient, buildTestApp, createTestMerchant } from '../../test/helpers.ts';
import { assertErrorShape } from '../../test/assertions.ts';

// Every operation of the OpenAPI document, driven with junk: path ids real and false, unknown and
// malformed query parameters, bodies of any shape. Never a 5xx, always the error shape; and the
// rules every operation shares are checked one by one.

type Operation = { method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'; path: string; query: string[]; body: boolean };

const collections: Record<string, string> = {
  requests: 'request',
  payments: 'payment',
  customers: 'customer',
  'recurring-consents': 'recurring',
  subscriptions: 'subscription',
  webhooks: 'webhook',
  events: 'event',
};

async function world(t: Parameters<typeof buildTestApp>[0]) {
  const app = await buildTestApp(t);
  // The pay test helper goes to the sandbox bank over HTTP, at the service's own address.
  app.deps.config.publicBaseUrl = (await app.app.listen({ port: 0, host: '127.0.0.1' })).replace(
    'localhost',
    '127.0.0.1',
  );
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const create = async (extra: Record<string, unknown>) =>
    (
      await api.post('/v1/requests', {
        bank_account_id: merchant.bankAccountId,
        message: 'Fuzz',
        cust_info: { email: 'fuzz@example.com' },
        ...extra,
      })
    ).body.request;
  const oneOff = await create({ amount: '5.00 NZD', type: 'multi' });
  const paid = (await api.post(`/v1/test-helpers/requests/${oneOff.id}/pay`, {})).body.payment;
  const recurring = await create({ recurring_options: { period: 'weekly', max_per_period: '100.00 NZD' } });
  const consent = (await api.post(`/v1/test-helpers/requests/${recurring.id}/pay`, {})).body.recurring_consent;
  const subscriptionRequest = await create({ subscription_options: { amount: '9.00 NZD', period: 'monthly' } });
  const subscription = (await api.post(`/v1/test-helpers/requests/${subscriptionRequest.id}/pay`, {})).body
    .subscription;
  const webhook = (await api.post('/v1/webhooks', { url: 'http://localhost:9/hooks' })).body.webhook;
  const event = (await api.get('/v1/events')).body.events[0];
  const customer = (await api.get('/v1/customers')).body.customers[0];
  const ids: Record<string, string> = {
    request: oneOff.id,
    payment: paid.id,
    customer: customer.id,
    recurring: consent.id,
    subscription: subscription.id,
    webhook: webhook.id,
    event: event.id,
  };
  const document = (await app.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json() as {
    paths: Record<string, Record<string, any>>;
  };
  const operations: Operation[] = Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({
      method: method.toUpperCase() as Operation['method'],
      path,
      query: (operation.parameters ?? []).filter((p: any) => p.in === 'query').map((p: any) => p.name),
      body: Boolean(operation.requestBody),
    })),
  );
  const idFor = (path: string) => {
    const collection = Object.keys(collections).find((name) => path.includes(`/${name}/{id}`));
    return collection ? ids[collections[collection]] : 'x';
  };
  return { app, api, operations, ids, idFor, key: merchant.testKey };
}

const junk = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.string(),
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.constantFrom(
      '10.00 NZD',
      '\u0000',
      '__proto__',
      '1e3',
      'request_01JD2Q8Z7M3V4K5N6P7R8S9T0V',
      '2027-01-01T00:00:00Z',
    ),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(fc.string({ maxLength: 12 }), tie('value'), { maxKeys: 3 }),
  ),
}));
const queryValue = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.constantFrom(
    '1e3',
    '0x10',
    '+5',
    '5 ',
    '-1',
    '0',
    '1001',
    'garbage',
    '%00',
    '\u0000',
    'request_01JD2Q8Z7M3V4K5N6P7R8S9T0V',
  ),
);

test('every operation: junk never causes a 5xx and always gets the error shape', async (t) => {
  const { app, operations, idFor, key } = await world(t);
  const headers = { authorization: `Bearer ${key}` };
  assert.ok(operations.length >= 30, `only ${operations.length} operations`);
  for (const operation of operations) {
    await fc.assert(
      fc.asyncProperty(
        fc.boolean(),
        fc.dictionary(
          fc.oneof(
            fc.constantFrom(...operation.query, 'limit', 'starting_after'),
            fc.string({ minLength: 1, maxLength: 10 }),
          ),
          queryValue,
          { maxKeys: 3 },
        ),
        fc.option(junk.value, { nil: undefined }),
        fc.oneof(
          fc.constant(''),
          fc.constantFrom('x', 'request_01JD2Q8Z7M3V4K5N6P7R8S9T0V', '%00', '..', 'a'.repeat(100)),
        ),
        async (realId, query, body, fakeId) => {
          const id = realId ? idFor(operation.path) : fakeId || 'x';
          const url = operation.path.replace('{id}', encodeURIComponent(id).replace(/%2500/, '%00'));
          const response = await app.app.inject({
            method: operation.method,
            url,
            query,
            headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
            payload: body === undefined ? undefined : JSON.stringify(body),
          });
          const text = response.body;
          assert.ok(
            response.statusCode < 500,
            `${operation.method} ${url} ${JSON.stringify(query)} ${text.slice(0, 300)}`,
          );
          if (response.statusCode >= 400)
            assertErrorShape({ status: response.statusCode, body: JSON.parse(text), text });
        },
      ),
      { numRuns: 25 },
    );
  }
});

test('every operation refuses an unknown query parameter, naming it; lists refuse a bad cursor and a loose limit', async (t) => {
  const { api, operations, idFor } = await world(t);
  for (const operation of operations) {
    const url = operation.path.replace('{id}', idFor(operation.path));
    const call = (query: Record<string, string>) =>
      operation.method === 'GET'
        ? api.get(url, { query })
        : operation.method === 'DELETE'
          ? api.delete(url, { query })
          : operation.method === 'PUT'
            ? api.put(url, undefined, { query })
            : operation.method === 'PATCH'
              ? api.patch(url, undefined, { query })
              : api.post(url, undefined, { query });
    const unknown = await call({ colour: 'blue' });
    assert.deepEqual(
      [unknown.status, unknown.body?.code],
      [400, 'bad_request.unknown_param.colour'],
      `${operation.method} ${operation.path}: ${unknown.text}`,
    );
    if (!operation.query.includes('limit')) continue;
    const cursor = await call({ starting_after: 'garbage' });
    assert.deepEqual(
      [cursor.status, cursor.body.code],
      [400, 'bad_request.invalid_param.starting_after'],
      `${operation.path}: ${cursor.text}`,
    );
    for (const limit of ['1e3', '0x10', '+5', '5 ', '1.5', '0', '1001']) {
      const loose = await call({ limit });
      assert.deepEqual(
        [loose.status, loose.body.code],
        [400, 'bad_request.invalid_param.limit'],
        `${operation.path} limit=${JSON.stringify(limit)}: ${loose.text}`,
      );
      assert.equal(loose.body.message, 'limit must be a whole number from 1 to 1000');
    }
    assert.equal((await call({ limit: '5' })).status, 200, operation.path);
    if (operation.method === 'GET') {
      const twice = await api.get(`${url}?limit=5&limit=5`);
      assert.deepEqual(
        [twice.status, twice.body.code],
        [400, 'bad_request.invalid_param.limit'],
        `${operation.path}: ${twice.text}`,
      );
    }
  }
});

test('actions that take no body accept none or {}, and refuse anything else', async (t) => {
  const { app, operations, ids, key } = await world(t);
  const actions = operations.filter((o) => o.method !== 'GET' && !o.body);
  assert.ok(actions.length >= 8, actions.map((a) => a.path).join(' '));
  for (const action of actions) {
    const url = action.path.replace('{id}', 'x');
    for (const [payload, code] of [
      ['[[[]]]', 'bad_request.invalid_json'],
      ['{"a":1}', 'bad_request.unknown_param.a'],
      ['"text"', 'bad_request.invalid_json'],
      ['null', 'bad_request.invalid_json'],
      ['0', 'bad_request.invalid_json'],
    ] as const) {
      const response = await app.app.inject({
        method: action.method,
        url,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        payload,
      });
      assert.deepEqual(
        [response.statusCode, response.json().code],
        [400, code],
        `${action.method} ${action.path} ${payload}`,
      );
    }
  }
  // none, or {}, is taken
  const revoke = await app.app.inject({
    method: 'PUT',
    url: `/v1/recurring-consents/${ids.recurring}/revoke`,
    headers: { authorization: `Bearer ${key}` },
  });
  assert.equal(revoke.statusCode, 200, revoke.body);
  const again = await app.app.inject({
    method: 'PUT',
    url: `/v1/recurring-consents/${ids.recurring}/revoke`,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    payload: '{}',
  });
  assert.equal(again.statusCode, 200, again.body);
  // an empty body sent with a JSON content type is no body, as many clients send that header on every call
  const empty = await app.app.inject({
    method: 'DELETE',
    url: `/v1/webhooks/${ids.webhook}`,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    payload: '',
  });
  assert.equal(empty.statusCode, 200, empty.body);
  const resend = await app.app.inject({
    method: 'POST',
    url: `/v1/events/${ids.event}/resend`,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    payload: '',
  });
  assert.equal(resend.statusCode, 200, resend.body);
  // where a body is required, an empty one is still not JSON
  const create = await app.app.inject({
    method: 'POST',
    url: '/v1/requests',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    payload: '',
  });
  assert.deepEqual([create.statusCode, create.json().code], [400, 'bad_request.invalid_json']);
});

test('without a key every operation is a 401, whatever the body: authentication comes before parsing and validation', async (t) => {
  const { app, operations, idFor } = await world(t);
  for (const operation of operations) {
    const url = operation.path.replace('{id}', idFor(operation.path));
    for (const payload of [undefined, '{"not":"valid"', '{"amount":"x"}']) {
      const response = await app.app.inject({
        method: operation.method,
        url,
        ...(payload !== undefined && { payload, headers: { 'content-type': 'application/json' } }),
      });
      assert.equal(response.statusCode, 401, `${operation.method} ${operation.path} ${payload}: ${response.body}`);
      assert.equal(response.json().code, 'unauthorized');
    }
  }
});
