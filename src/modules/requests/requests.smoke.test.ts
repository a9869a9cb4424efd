import { test } from 'node:test';
import assert from 'node:assert/strict';
import { apiClient, buildTestApp, createTestMerchant } from '../../../test/helpers.ts';

test('create, get, list and delete a request', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const created = await api.post('/v1/requests', {
    bank_account_id: merchant.bankAccountId,
    amount: '12.50 NZD',
    message: 'Coffee',
    reference: 'INV-1',
    expires_in: '10m',
  });
  assert.equal(created.status, 201, created.text);
  const request = created.body.request;
  assert.equal(request.status, 'active');
  assert.deepEqual(request.amount, { value: '12.50 NZD', formatted: '$12.50' });
  assert.match(request.qr_data, /^data:image\/png;base64,/);
  assert.equal(request.is_test_mode, true);
  const got = await api.get(`/requests/${request.id}`);
  assert.deepEqual(got.body, created.body);
  const list = await api.get('/v1/requests');
  assert.equal(list.body.requests.length, 1);
  const live = apiClient(app, merchant.liveKey);
  assert.equal((await live.get(`/v1/requests/${request.id}`)).status, 404);
  const deleted = await api.delete(`/v1/requests/${request.id}`);
  assert.equal(deleted.status, 200, deleted.text);
  assert.equal(deleted.body.request.status, 'deleted');
  const bad = await api.post('/v1/requests', {
    bank_account_id: merchant.bankAccountId,
    amount: '12.5 NZD',
    message: 'x',
  });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.code, 'bad_request.invalid_param.amount');
  const events = await app.deps.db.selectFrom('events').select(['type']).orderBy('id').execute();
  assert.deepEqual(
    events.map((e) => e.type),
    ['request.created', 'request.status_updated'],
  );
  const advanced = await api.post('/v1/test-helpers/clock/advance', { seconds: 60 });
  assert.equal(advanced.status, 200, advanced.text);
});

test('/metrics exposes HTTP and job figures', async (t) => {
  const app = await buildTestApp(t);
  await app.app.inject({ method: 'GET', url: '/healthz' });
  const metrics = await app.app.inject({ method: 'GET', url: '/metrics' });
  assert.equal(metrics.statusCode, 200);
  assert.match(
    metrics.body,
    /tono_http_request_duration_seconds_count\{method="GET",route="\/healthz",status="200"\} 1/,
  );
  assert.match(metrics.body, /tono_jobs_failed 0/);
});
