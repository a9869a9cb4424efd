import { test } from 'node:test';
import { loadConfig } from '../../config.ts';
import assert from 'node:assert/strict';
import { apiClient, buildTestApp, createTestMerchant } from '../../../test/helpers.ts';
import { EVENT_TYPES } from '../events/events.builders.ts';

test('create shows the secret once; get, list and delete', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const first = await api.post('/v1/webhooks', { url: 'http://localhost:4000/hooks' });
  assert.equal(first.status, 201, first.text);
  const webhook = first.body.webhook;
  assert.match(webhook.id, /^webhook_/);
  assert.equal(Buffer.from(webhook.secret, 'base64').length, 32);
  assert.deepEqual(
    { ...webhook, id: undefined, secret: undefined, created_at: undefined },
    {
      id: undefined,
      secret: undefined,
      created_at: undefined,
      url: 'http://localhost:4000/hooks',
      description: null,
      events: null,
      is_test_mode: true,
      disabled: false,
    },
  );
  const second = await api.post('/v1/webhooks', {
    url: 'https://example.com/hooks',
    events: ['payment.status_updated', 'request.expired'],
  });
  assert.equal(second.status, 201);
  assert.deepEqual(second.body.webhook.events, ['payment.status_updated', 'request.expired']);

  const got = await api.get(`/v1/webhooks/${webhook.id}`);
  assert.equal(got.status, 200);
  assert.equal('secret' in got.body.webhook, false, 'the secret is never shown again');
  const list = await api.get('/v1/webhooks', { query: { limit: '1' } });
  assert.deepEqual(
    list.body.webhooks.map((w: any) => w.id),
    [second.body.webhook.id],
  );
  assert.equal(list.body.has_more, true);
  assert.equal('secret' in list.body.webhooks[0], false);
  const next = await api.get('/v1/webhooks', { query: { limit: '1', starting_after: second.body.webhook.id } });
  assert.deepEqual(
    next.body.webhooks.map((w: any) => w.id),
    [webhook.id],
  );
  assert.equal(next.body.has_more, false);

  const live = apiClient(app, merchant.liveKey);
  assert.deepEqual((await live.get(`/v1/webhooks/${webhook.id}`)).body, {
    code: 'not_found.webhook',
    message: `No such webhook: ${webhook.id}`,
    params: { id: webhook.id },
  });
  assert.deepEqual((await live.get('/v1/webhooks')).body, { webhooks: [], has_more: false });

  const deleted = await api.delete(`/v1/webhooks/${webhook.id}`);
  assert.equal(deleted.status, 200);
  assert.equal(deleted.body.deleted, true);
  assert.equal((await api.get(`/v1/webhooks/${webhook.id}`)).status, 404);
  assert.equal((await api.delete(`/v1/webhooks/${webhook.id}`)).status, 404);
  const row = await app.deps.db
    .selectFrom('webhook_endpoints')
    .select('secret')
    .where('id', '=', webhook.id)
    .executeTakeFirstOrThrow();
  assert.equal(row.secret, '', 'a deleted endpoint forgets its secret');
});

test('bad input gets a clear error and creates nothing', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const live = apiClient(app, merchant.liveKey);
  const urlForm = 'url must be an https URL (http only to localhost with a test key), at most 2048 characters';
  const cases: Array<[typeof api, unknown, object]> = [
    [api, {}, { code: 'bad_request.missing_param.url', message: 'url is required', params: { field: 'url' } }],
    [
      api,
      { url: 'https://example.com', secret: 'x' },
      {
        code: 'bad_request.unknown_param.secret',
        message: 'secret is not a parameter of this endpoint',
        params: { field: 'secret' },
      },
    ],
    [
      api,
      { url: 'http://example.com/hook' },
      { code: 'bad_request.invalid_param.url', message: urlForm, params: { field: 'url' } },
    ],
    [api, { url: 'nonsense' }, { code: 'bad_request.invalid_param.url', message: urlForm, params: { field: 'url' } }],
    [
      live,
      { url: 'http://localhost:4000/hook' },
      { code: 'bad_request.invalid_param.url', message: urlForm, params: { field: 'url' } },
    ],
    [
      api,
      { url: 'https://example.com', events: ['payment.teleported'] },
      {
        code: 'bad_request.invalid_param.events',
        message: `events contains "payment.teleported", which is not an event type; known types: ${EVENT_TYPES.join(', ')}`,
        params: { field: 'events' },
      },
    ],
    [
      api,
      { url: 'https://example.com', events: ['request.created', 'request.created'] },
      {
        code: 'bad_request.invalid_param.events',
        message: 'events lists "request.created" twice',
        params: { field: 'events' },
      },
    ],
    [
      api,
      { url: 'https://example.com', events: [] },
      {
        code: 'bad_request.invalid_param.events',
        message: 'events must be a non-empty list of event types',
        params: { field: 'events' },
      },
    ],
  ];
  for (const [client, body, error] of cases) {
    const response = await client.post('/v1/webhooks', body);
    assert.equal(response.status, 400, JSON.stringify(body));
    assert.deepEqual(response.body, error);
  }
  assert.equal((await app.deps.db.selectFrom('webhook_endpoints').select('id').execute()).length, 0);
  const noKey = await app.app.inject({ method: 'GET', url: '/v1/webhooks' });
  assert.equal(noKey.statusCode, 401);
});

test('where non-global targets are not allowed, no endpoint of either mode may point at one', async (t) => {
  const app = await buildTestApp(t, { targetReach: { live: 'global', test: 'global' } });
  const merchant = await createTestMerchant(app);
  for (const key of [merchant.testKey, merchant.liveKey]) {
    for (const url of [
      'https://127.0.0.1/hook',
      'https://169.254.169.254/hook',
      'https://[::ffff:127.0.0.1]/hook',
      'https://192.0.2.1/hook',
    ]) {
      const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
      const response = await apiClient(app, key).post('/v1/webhooks', { url });
      assert.deepEqual(
        [response.status, response.body],
        [
          400,
          {
            code: 'bad_request.invalid_param.url',
            message:
              `url's host ${host} is not a globally routable address (private, loopback, link-local or another special-purpose range); ` +
              'webhooks must reach a public address unless the operator sets ALLOW_PRIVATE_TARGETS=true',
            params: { field: 'url', host },
          },
        ],
        url,
      );
    }
  }
  assert.equal(
    (await apiClient(app, merchant.testKey).post('/v1/webhooks', { url: 'http://localhost:4000/hook' })).status,
    400,
  );
  assert.equal((await app.deps.db.selectFrom('webhook_endpoints').select('id').execute()).length, 0);
});

test('on a service listening on loopback, live endpoints still reach only global addresses, and test endpoints this machine but not its network; ALLOW_PRIVATE_TARGETS=true opens both', async (t) => {
  const app = await buildTestApp(t, { targetReach: loadConfig({ HOST: '127.0.0.1' }).targetReach });
  const merchant = await createTestMerchant(app);
  const live = apiClient(app, merchant.liveKey);
  const test = apiClient(app, merchant.testKey);
  assert.equal(
    (await live.post('/v1/webhooks', { url: 'https://127.0.0.1:5201/hook' })).body.code,
    'bad_request.invalid_param.url',
  );
  assert.equal(
    (await test.post('/v1/webhooks', { url: 'https://10.0.0.8/hook' })).body.code,
    'bad_request.invalid_param.url',
  );
  assert.equal((await test.post('/v1/webhooks', { url: 'http://localhost:4000/hook' })).status, 201);

  app.deps.config.targetReach = loadConfig({ HOST: '127.0.0.1', ALLOW_PRIVATE_TARGETS: 'true' }).targetReach;
  const created = await live.post('/v1/webhooks', { url: 'https://127.0.0.1:8443/hook' });
  assert.equal(created.status, 201, created.text);
  assert.equal(created.body.webhook.is_test_mode, false);
});

test('an Idempotency-Key makes a retried create return the same endpoint instead of a second one', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const headers = { 'idempotency-key': 'setup-hooks-1' };
  const first = await api.post('/v1/webhooks', { url: 'http://localhost:4000/hooks' }, { headers });
  const again = await api.post('/v1/webhooks', { url: 'http://localhost:4000/hooks' }, { headers });
  assert.equal(first.status, 201);
  assert.deepEqual([again.status, again.headers['idempotent-replayed'], again.body], [200, 'true', first.body]);
  assert.equal((await api.get('/v1/webhooks')).body.webhooks.length, 1);
  const other = await api.post('/v1/webhooks', { url: 'http://localhost:4000/other' }, { headers });
  assert.deepEqual(
    [other.status, other.body],
    [
      409,
      {
        code: 'conflict.idempotency_key_reused',
        message: 'This Idempotency-Key was used with a different request',
        params: { idempotency_key: 'setup-hooks-1' },
      },
    ],
  );
  // The URL is checked after the key: a retry answers with its endpoint even when the URL would
  // be refused now (its host no longer reachable under the service's settings, a DNS change).
  app.deps.config.targetReach = { live: 'global', test: 'global' };
  const later = await api.post('/v1/webhooks', { url: 'http://localhost:4000/hooks' }, { headers });
  assert.deepEqual([later.status, later.body], [200, first.body]);
  const fresh = await api.post(
    '/v1/webhooks',
    { url: 'http://localhost:4000/hooks' },
    { headers: { 'idempotency-key': 'setup-hooks-2' } },
  );
  assert.equal(fresh.status, 400, fresh.text);
});

test('a description labels an endpoint: trimmed, empty is none, at most 200 characters, changed and removed with PATCH', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const url = 'http://localhost:4000/hooks';
  const shop = await api.post('/v1/webhooks', { url, description: '  Shop orders  ' });
  const crm = await api.post('/v1/webhooks', { url, description: 'CRM sync' });
  assert.deepEqual([shop.status, shop.body.webhook.description], [201, 'Shop orders'], shop.text);
  assert.equal(crm.body.webhook.description, 'CRM sync', 'two endpoints with one URL, told apart');
  assert.equal((await api.get(`/v1/webhooks/${shop.body.webhook.id}`)).body.webhook.description, 'Shop orders');
  assert.deepEqual(
    (await api.get('/v1/webhooks')).body.webhooks.map((w: any) => w.description),
    ['CRM sync', 'Shop orders'],
  );
  for (const blank of ['', '   ', null]) {
    const none = await api.post('/v1/webhooks', { url, description: blank });
    assert.deepEqual([none.status, none.body.webhook.description], [201, null], JSON.stringify(blank));
  }
  const longest = 'x'.repeat(200);
  assert.equal((await api.post('/v1/webhooks', { url, description: longest })).body.webhook.description, longest);
  const before = (await api.get('/v1/webhooks')).body.webhooks.length;
  for (const description of ['x'.repeat(201), 42]) {
    const refused = await api.post('/v1/webhooks', { url, description });
    assert.deepEqual(
      [refused.status, refused.body],
      [
        400,
        {
          code: 'bad_request.invalid_param.description',
          message: 'description must be text of at most 200 characters, or null',
          params: { field: 'description' },
        },
      ],
    );
  }
  assert.equal((await api.get('/v1/webhooks')).body.webhooks.length, before, 'nothing created');

  const id = shop.body.webhook.id;
  const renamed = await api.patch(`/v1/webhooks/${id}`, { description: ' Shop orders (new) ' });
  assert.deepEqual([renamed.status, renamed.body.webhook.description], [200, 'Shop orders (new)'], renamed.text);
  assert.equal((await api.get(`/v1/webhooks/${id}`)).body.webhook.description, 'Shop orders (new)');
  assert.equal((await api.patch(`/v1/webhooks/${id}`, { description: 'x'.repeat(201) })).status, 400);
  assert.equal(
    (await api.patch(`/v1/webhooks/${id}`, { disabled: true })).body.webhook.description,
    'Shop orders (new)',
  );
  assert.equal((await api.patch(`/v1/webhooks/${id}`, { description: '' })).body.webhook.description, null);
  await api.patch(`/v1/webhooks/${id}`, { description: 'again' });
  assert.equal((await api.patch(`/v1/webhooks/${id}`, { description: null })).body.webhook.description, null);
  assert.equal((await api.get(`/v1/webhooks/${id}`)).body.webhook.description, null);
  const other = apiClient(app, (await createTestMerchant(app, 'Other')).testKey);
  assert.equal((await other.patch(`/v1/webhooks/${crm.body.webhook.id}`, { description: 'mine' })).status, 404);
  assert.equal((await api.get(`/v1/webhooks/${crm.body.webhook.id}`)).body.webhook.description, 'CRM sync');
});
