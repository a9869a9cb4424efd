import { test } from 'node:test';
import assert from 'node:assert/strict';
import { apiClient, buildTestApp, createTestMerchant, type TestApp } from '../../../test/helpers.ts';
import { assertError } from '../../../test/assertions.ts';

const DAY = 86_400_000;

async function expiredEvents(app: TestApp, userId: string) {
  const rows = await app.deps.db.selectFrom('events').select(['object_id', 'body']).where('user_id', '=', userId).where('type', '=', 'request.expired').orderBy('id').execute();
  return rows.map((row) => ({ id: row.object_id, data: JSON.parse(row.body).data }));
}

test('GET and advance the test clock; refusals', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);

  // Times are checked against real time read just before and just after each call (the clock
  // reads it in between), never against a fixed allowance, which a loaded machine can exceed.
  let before = Date.now();
  const start = await api.get('/v1/test-helpers/clock');
  let after = Date.now();
  assert.equal(start.status, 200, start.text);
  assert.equal(start.body.clock.offset_seconds, 0);
  const startedAt = Date.parse(start.body.clock.now);
  assert.ok(startedAt >= before && startedAt <= after, `${start.body.clock.now} not within the call`);

  before = Date.now();
  const bySeconds = await api.post('/v1/test-helpers/clock/advance', { seconds: 3600 });
  after = Date.now();
  assert.equal(bySeconds.status, 200, bySeconds.text);
  assert.equal(bySeconds.body.clock.offset_seconds, 3600);
  const reached = Date.parse(bySeconds.body.clock.now);
  assert.ok(reached >= before + 3600_000 && reached <= after + 3600_000, `${bySeconds.body.clock.now} is not an hour ahead`);

  before = Date.now();
  const target = new Date(before + 10 * DAY).toISOString();
  const byTo = await api.post('/v1/test-helpers/clock/advance', { to: target });
  after = Date.now();
  assert.equal(byTo.status, 200, byTo.text);
  const now = Date.parse(byTo.body.clock.now);
  assert.ok(now >= Date.parse(target) && now <= Date.parse(target) + (after - before), `${byTo.body.clock.now} vs ${target}`);
  // The target was computed from real time before the call, so the offset is 10 days less some of the call's duration.
  const offset = byTo.body.clock.offset_seconds;
  assert.ok(offset * 1000 <= 10 * DAY + 500 && offset * 1000 >= 10 * DAY - (after - before) - 500, `offset ${offset}`);
  assert.equal((await api.get('/v1/test-helpers/clock')).body.clock.offset_seconds, offset);

  const exactlyOne = 'Give exactly one of to (an ISO 8601 time) or seconds';
  assertError(await api.post('/v1/test-helpers/clock/advance', {}), 400, 'bad_request.invalid_param.to', exactlyOne, { field: 'to' });
  assertError(await api.post('/v1/test-helpers/clock/advance', { to: target, seconds: 5 }), 400, 'bad_request.invalid_param.to', exactlyOne, { field: 'to' });
  const past = await api.post('/v1/test-helpers/clock/advance', { to: new Date(Date.now() + DAY).toISOString() });
  assert.equal(past.body.code, 'bad_request.invalid_param.to');
  assert.equal(past.body.message, "to must be later than the clock's current time; test clocks only move forward");
  assert.deepEqual(Object.keys(past.body.params), ['field', 'now']);
  assertError(await api.post('/v1/test-helpers/clock/advance', { to: 'next tuesday' }), 400, 'bad_request.invalid_param.to', 'to must be an ISO 8601 date-time', { field: 'to' });
  assertError(await api.post('/v1/test-helpers/clock/advance', { seconds: 0 }), 400, 'bad_request.invalid_param.seconds', 'seconds must be at least 1', { field: 'seconds' });
  assertError(await api.post('/v1/test-helpers/clock/advance', { seconds: -60 }), 400, 'bad_request.invalid_param.seconds', 'seconds must be at least 1', { field: 'seconds' });
  assertError(await api.post('/v1/test-helpers/clock/advance', { seconds: 1.5 }), 400, 'bad_request.invalid_param.seconds', 'seconds must be an integer', { field: 'seconds' });
  assertError(await api.post('/v1/test-helpers/clock/advance', { seconds: '60' }), 400, 'bad_request.invalid_param.seconds', 'seconds must be an integer', { field: 'seconds' });
  assertError(await api.post('/v1/test-helpers/clock/advance', { days: 1 }), 400, 'bad_request.unknown_param.days', 'days is not a parameter of this endpoint', { field: 'days' });
  assert.equal((await api.get('/v1/test-helpers/clock')).body.clock.offset_seconds, offset, 'refusals moved nothing');

  const live = apiClient(app, merchant.liveKey);
  const liveOnly = 'Test helpers exist only for test keys (sk_test_…)';
  assertError(await live.get('/v1/test-helpers/clock'), 404, 'not_found.route', liveOnly);
  assertError(await live.post('/v1/test-helpers/clock/advance', { seconds: 60 }), 404, 'not_found.route', liveOnly);
  assertError(await live.post('/v1/test-helpers/clock/advance', { nonsense: true }), 404, 'not_found.route', liveOnly);
  assertError(await apiClient(app, 'sk_test_nope').get('/v1/test-helpers/clock'), 401, 'unauthorized', 'Unknown or revoked API key');
});

test('test-mode objects live on their merchant\'s clock; live mode and other merchants do not move', async (t) => {
  const app = await buildTestApp(t);
  const alice = await createTestMerchant(app);
  const bob = await createTestMerchant(app);
  await apiClient(app, alice.testKey).post('/v1/test-helpers/clock/advance', { seconds: 30 * 86400 });
  const make = async (key: string, bankAccountId: string) =>
    (await apiClient(app, key).post('/v1/requests', { bank_account_id: bankAccountId, amount: '1.00 NZD', message: 'x', expires_in: '1d' })).body.request;
  const aliceTest = await make(alice.testKey, alice.bankAccountId);
  const aliceLive = await make(alice.liveKey, alice.bankAccountId);
  const bobTest = await make(bob.testKey, bob.bankAccountId);
  const ahead = Date.parse(aliceTest.created_at) - Date.now();
  assert.ok(ahead > 30 * DAY - 5000 && ahead <= 30 * DAY, `alice test created_at is ${ahead} ms ahead`);
  assert.ok(Math.abs(Date.parse(aliceLive.created_at) - Date.now()) < 5000);
  assert.ok(Math.abs(Date.parse(bobTest.created_at) - Date.now()) < 5000);
  assert.equal((await apiClient(app, bob.testKey).get('/v1/test-helpers/clock')).body.clock.offset_seconds, 0);

  await apiClient(app, alice.testKey).post('/v1/test-helpers/clock/advance', { seconds: 2 * 86400 });
  const status = async (key: string, id: string) => (await apiClient(app, key).get(`/v1/requests/${id}`)).body.request.status;
  assert.equal(await status(alice.testKey, aliceTest.id), 'expired');
  assert.equal(await status(alice.liveKey, aliceLive.id), 'active', 'live mode keeps real time');
  assert.equal(await status(bob.testKey, bobTest.id), 'active', "another merchant's clock did not move");
});

test('advancing runs due work in order, each at its own time, and not before', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const ids: Record<string, string> = {};
  for (const expires of ['3m', '1m', '2m', '1d']) {
    const response = await api.post('/v1/requests', { bank_account_id: merchant.bankAccountId, amount: '1.00 NZD', message: expires, expires_in: expires, merchant_identifier: expires });
    ids[expires] = response.body.request.id;
  }
  const expiresAt = async (id: string) => Date.parse((await api.get(`/v1/requests/${id}`)).body.request.expires_at);
  const statusOf = async (id: string) => (await api.get(`/v1/requests/${id}`)).body.request.status;

  // one second short of the first expiry: nothing happens
  const first = await expiresAt(ids['1m']);
  const clockNow = Date.parse((await api.get('/v1/test-helpers/clock')).body.clock.now);
  await api.post('/v1/test-helpers/clock/advance', { to: new Date(first - 1000).toISOString() });
  assert.equal(clockNow < first - 1000, true);
  assert.equal(await statusOf(ids['1m']), 'active');
  assert.deepEqual(await expiredEvents(app, merchant.userId), []);

  const advanced = await api.post('/v1/test-helpers/clock/advance', { seconds: 300 });
  assert.equal(advanced.status, 200, advanced.text);
  const events = await expiredEvents(app, merchant.userId);
  assert.deepEqual(events.map((e) => e.data.merchant_identifier), ['1m', '2m', '3m'], 'in due order');
  for (const event of events) {
    const due = await expiresAt(event.id);
    const at = Date.parse(event.data.updated_at);
    assert.ok(at >= due && at < due + 1000, `expired at ${event.data.updated_at}, due ${new Date(due).toISOString()}`);
    assert.deepEqual(event.data, { id: event.id, user_id: merchant.userId, merchant_identifier: event.data.merchant_identifier, status: 'expired', updated_at: event.data.updated_at });
    const request = (await api.get(`/v1/requests/${event.id}`)).body.request;
    assert.equal(request.status, 'expired');
    assert.equal(request.updated_at, event.data.updated_at);
  }
  assert.equal(await statusOf(ids['1d']), 'active');
  const jobs = await app.deps.db.selectFrom('jobs').select('payload').where('clock_id', '=', merchant.userId).execute();
  assert.deepEqual(jobs.map((job) => JSON.parse(job.payload).request_id), [ids['1d']], 'finished jobs are gone');

  // an expired request cannot be deleted; a deleted one does not expire
  assertError(await api.delete(`/v1/requests/${ids['1m']}`), 409, 'conflict.invalid_state', 'Cannot delete a request whose status is expired', { status: 'expired' });
  await api.delete(`/v1/requests/${ids['1d']}`);
  await api.post('/v1/test-helpers/clock/advance', { seconds: 2 * 86400 });
  assert.equal(await statusOf(ids['1d']), 'deleted');
  assert.equal((await expiredEvents(app, merchant.userId)).length, 3);
});

async function listeningApp(t: Parameters<typeof buildTestApp>[0], overrides: Parameters<typeof buildTestApp>[1] = {}) {
  const app = await buildTestApp(t, overrides);
  // The pay test helper reaches the sandbox bank over HTTP at the service's own address.
  app.deps.config.publicBaseUrl = (await app.app.listen({ port: 0, host: '127.0.0.1' })).replace('localhost', '127.0.0.1');
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const request = (await api.post('/v1/requests', {
    bank_account_id: merchant.bankAccountId, message: 'Weekly beans', subscription_options: { amount: '4.00 NZD', period: 'weekly' }, cust_info: { email: 'pat@example.com' },
  })).body.request;
  const subscription = (await api.post(`/v1/test-helpers/requests/${request.id}/pay`, {})).body.subscription;
  return { app, api, subscription };
}

test('`to` has the same 20-year bound as `seconds`, and one advance runs at most TEST_CLOCK_MAX_JOBS jobs, saying when work remains', async (t) => {
  const { app, api, subscription } = await listeningApp(t, { testClockMaxJobs: 5 });
  const now = Date.parse((await api.get('/v1/test-helpers/clock')).body.clock.now);
  const tooFar = await api.post('/v1/test-helpers/clock/advance', { to: '9999-12-31T00:00:00Z' });
  assert.equal(tooFar.status, 400);
  assert.equal(tooFar.body.code, 'bad_request.invalid_param.to');
  assert.equal(tooFar.body.message, "to must be at most 632448000 seconds (20 years) after the clock's current time");
  assert.equal((await api.get('/v1/test-helpers/clock')).body.clock.offset_seconds, 0, 'refused: the clock did not move');

  const target = new Date(now + 365 * DAY).toISOString();
  const first = await api.post('/v1/test-helpers/clock/advance', { to: target });
  assert.equal(first.status, 200, first.text);
  assert.equal(first.body.work_remaining, true);
  assert.ok(Date.parse(first.body.clock.now) < Date.parse(target), 'the clock stopped where the work stopped');
  const chargedFirst = (await api.get(`/v1/subscriptions/${subscription.id}`)).body.subscription.successful_charges;
  assert.ok(chargedFirst >= 1 && chargedFirst <= 5, `${chargedFirst} charges after 5 jobs`);

  let calls = 1;
  let last = first;
  while (last.body.work_remaining) {
    last = await api.post('/v1/test-helpers/clock/advance', { to: target });
    calls++;
    assert.ok(calls < 200, 'advancing converges');
  }
  assert.ok(Date.parse(last.body.clock.now) >= Date.parse(target));
  const done = (await api.get(`/v1/subscriptions/${subscription.id}`)).body.subscription;
  assert.equal(done.successful_charges, 53, 'a year of weekly charges, each once, the first at approval');
  void app;
});

test('GET /subscriptions/{id}/payments lists every payment without limit (more than a page), and pages with one', async (t) => {
  const { api, subscription } = await listeningApp(t);
  const now = Date.parse((await api.get('/v1/test-helpers/clock')).body.clock.now);
  const advanced = await api.post('/v1/test-helpers/clock/advance', { to: new Date(now + 2 * 366 * DAY).toISOString() });
  assert.equal(advanced.body.work_remaining, false);
  const all = await api.get(`/subscriptions/${subscription.id}/payments`);
  assert.equal(all.status, 200, all.text);
  assert.ok(all.body.payments.length > 100, `${all.body.payments.length} payments`);
  assert.equal(all.body.has_more, false);
  const page = await api.get(`/v1/subscriptions/${subscription.id}/payments`, { query: { limit: '10' } });
  assert.deepEqual([page.body.payments.length, page.body.has_more], [10, true]);
});
