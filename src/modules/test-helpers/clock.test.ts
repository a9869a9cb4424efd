import { test } from 'node:test';
import assert from 'node:assert/strict';
import { apiClient, buildTestApp, createTestMerchant, type ApiClient, type TestApp } from '../../../test/helpers.ts';
import { assertError } from '../../../test/assertions.ts';
import { dashWorld, logIn, textOf } from '../../../test/dashboard.ts';
import { Browser } from '../../../test/payer.ts';
import { when } from '../dashboard/dashboard.format.ts';
import { addDays as addDaysTo, localAt } from '../../shared/zone.ts';
import { MAX_AHEAD_SECONDS } from './clock.service.ts';

const DAY = 86_400_000;

async function expiredEvents(app: TestApp, userId: string) {
  const rows = await app.deps.db
    .selectFrom('events')
    .select(['object_id', 'body'])
    .where('user_id', '=', userId)
    .where('type', '=', 'request.expired')
    .orderBy('id')
    .execute();
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
  assert.ok(
    reached >= before + 3600_000 && reached <= after + 3600_000,
    `${bySeconds.body.clock.now} is not an hour ahead`,
  );

  before = Date.now();
  const target = new Date(before + 10 * DAY).toISOString();
  const byTo = await api.post('/v1/test-helpers/clock/advance', { to: target });
  after = Date.now();
  assert.equal(byTo.status, 200, byTo.text);
  const now = Date.parse(byTo.body.clock.now);
  assert.ok(
    now >= Date.parse(target) && now <= Date.parse(target) + (after - before),
    `${byTo.body.clock.now} vs ${target}`,
  );
  // The target was computed from real time before the call, so the offset is 10 days less some of the call's duration.
  const offset = byTo.body.clock.offset_seconds;
  assert.ok(offset * 1000 <= 10 * DAY + 500 && offset * 1000 >= 10 * DAY - (after - before) - 500, `offset ${offset}`);
  assert.equal((await api.get('/v1/test-helpers/clock')).body.clock.offset_seconds, offset);

  const exactlyOne = 'Give exactly one of to (an ISO 8601 time) or seconds';
  assertError(await api.post('/v1/test-helpers/clock/advance', {}), 400, 'bad_request.invalid_param.to', exactlyOne, {
    field: 'to',
  });
  assertError(
    await api.post('/v1/test-helpers/clock/advance', { to: target, seconds: 5 }),
    400,
    'bad_request.invalid_param.to',
    exactlyOne,
    { field: 'to' },
  );
  const past = await api.post('/v1/test-helpers/clock/advance', { to: new Date(Date.now() + DAY).toISOString() });
  assert.equal(past.body.code, 'bad_request.invalid_param.to');
  assert.equal(past.body.message, "to must be later than the clock's current time; test clocks only move forward");
  assert.deepEqual(Object.keys(past.body.params), ['field', 'now']);
  assertError(
    await api.post('/v1/test-helpers/clock/advance', { to: 'next tuesday' }),
    400,
    'bad_request.invalid_param.to',
    'to must be an ISO 8601 date-time',
    { field: 'to' },
  );
  // The API's one date-time form (docs/api-conventions.md): a lowercase t or z, a space for the T,
  // no offset, 24:00 or an offset past ±14:00 is refused like any other text.
  const day = new Date(Date.now() + 30 * DAY).toISOString().slice(0, 10);
  for (const to of [
    `${day}t10:00:00z`,
    `${day}T10:00:00z`,
    `${day} 10:00:00Z`,
    `${day}T10:00:00`,
    `${day}T24:00:00Z`,
    `${day}T10:00:00+14:30`,
    `${day}T10:00:00+99:99`,
    day,
  ])
    assertError(
      await api.post('/v1/test-helpers/clock/advance', { to }),
      400,
      'bad_request.invalid_param.to',
      'to must be an ISO 8601 date-time',
      { field: 'to' },
    );
  assertError(
    await api.post('/v1/test-helpers/clock/advance', { seconds: 0 }),
    400,
    'bad_request.invalid_param.seconds',
    'seconds must be at least 1',
    { field: 'seconds' },
  );
  assertError(
    await api.post('/v1/test-helpers/clock/advance', { seconds: -60 }),
    400,
    'bad_request.invalid_param.seconds',
    'seconds must be at least 1',
    { field: 'seconds' },
  );
  assertError(
    await api.post('/v1/test-helpers/clock/advance', { seconds: 1.5 }),
    400,
    'bad_request.invalid_param.seconds',
    'seconds must be an integer',
    { field: 'seconds' },
  );
  assertError(
    await api.post('/v1/test-helpers/clock/advance', { seconds: '60' }),
    400,
    'bad_request.invalid_param.seconds',
    'seconds must be an integer',
    { field: 'seconds' },
  );
  assertError(
    await api.post('/v1/test-helpers/clock/advance', { days: 1 }),
    400,
    'bad_request.unknown_param.days',
    'days is not a parameter of this endpoint',
    { field: 'days' },
  );
  assert.equal((await api.get('/v1/test-helpers/clock')).body.clock.offset_seconds, offset, 'refusals moved nothing');

  // Seconds are optional, and the offset may be any within ±14:00.
  for (const to of [`${day}T10:00Z`, `${addDaysTo(day, 1)}T10:00+14:00`, `${addDaysTo(day, 2)}T10:00:00.5-14:00`]) {
    const moved = await api.post('/v1/test-helpers/clock/advance', { to });
    assert.equal(moved.status, 200, `${to}: ${moved.text}`);
    // The clock goes on with real time after it arrives: within the call's time of the target.
    const arrived = Date.parse(moved.body.clock.now) - Date.parse(to.replace(/T(\d\d:\d\d)([Z+-])/, 'T$1:00$2'));
    assert.ok(arrived >= 0 && arrived < 60_000, `${to}: ${moved.body.clock.now}`);
  }

  const live = apiClient(app, merchant.liveKey);
  const liveOnly = 'Test helpers exist only for test keys (sk_test_…)';
  assertError(await live.get('/v1/test-helpers/clock'), 404, 'not_found.route', liveOnly);
  assertError(await live.post('/v1/test-helpers/clock/advance', { seconds: 60 }), 404, 'not_found.route', liveOnly);
  assertError(await live.post('/v1/test-helpers/clock/advance', { nonsense: true }), 404, 'not_found.route', liveOnly);
  assertError(
    await apiClient(app, 'sk_test_nope').get('/v1/test-helpers/clock'),
    401,
    'unauthorized',
    'Unknown or revoked API key',
  );
});

test("test-mode objects live on their merchant's clock; live mode and other merchants do not move", async (t) => {
  const app = await buildTestApp(t);
  const alice = await createTestMerchant(app);
  const bob = await createTestMerchant(app);
  await apiClient(app, alice.testKey).post('/v1/test-helpers/clock/advance', { seconds: 30 * 86400 });
  const make = async (key: string, bankAccountId: string) =>
    (
      await apiClient(app, key).post('/v1/requests', {
        bank_account_id: bankAccountId,
        amount: '1.00 NZD',
        message: 'x',
        expires_in: '1d',
      })
    ).body.request;
  const aliceTest = await make(alice.testKey, alice.bankAccountId);
  const aliceLive = await make(alice.liveKey, alice.bankAccountId);
  const bobTest = await make(bob.testKey, bob.bankAccountId);
  const ahead = Date.parse(aliceTest.created_at) - Date.now();
  assert.ok(ahead > 30 * DAY - 5000 && ahead <= 30 * DAY, `alice test created_at is ${ahead} ms ahead`);
  assert.ok(Math.abs(Date.parse(aliceLive.created_at) - Date.now()) < 5000);
  assert.ok(Math.abs(Date.parse(bobTest.created_at) - Date.now()) < 5000);
  assert.equal((await apiClient(app, bob.testKey).get('/v1/test-helpers/clock')).body.clock.offset_seconds, 0);

  await apiClient(app, alice.testKey).post('/v1/test-helpers/clock/advance', { seconds: 2 * 86400 });
  const status = async (key: string, id: string) =>
    (await apiClient(app, key).get(`/v1/requests/${id}`)).body.request.status;
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
    const response = await api.post('/v1/requests', {
      bank_account_id: merchant.bankAccountId,
      amount: '1.00 NZD',
      message: expires,
      expires_in: expires,
      merchant_identifier: expires,
    });
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
  assert.deepEqual(
    events.map((e) => e.data.merchant_identifier),
    ['1m', '2m', '3m'],
    'in due order',
  );
  for (const event of events) {
    const due = await expiresAt(event.id);
    const at = Date.parse(event.data.updated_at);
    assert.ok(at >= due && at < due + 1000, `expired at ${event.data.updated_at}, due ${new Date(due).toISOString()}`);
    assert.deepEqual(event.data, {
      id: event.id,
      user_id: merchant.userId,
      merchant_identifier: event.data.merchant_identifier,
      status: 'expired',
      updated_at: event.data.updated_at,
    });
    const request = (await api.get(`/v1/requests/${event.id}`)).body.request;
    assert.equal(request.status, 'expired');
    assert.equal(request.updated_at, event.data.updated_at);
  }
  assert.equal(await statusOf(ids['1d']), 'active');
  const jobs = await app.deps.db.selectFrom('jobs').select('payload').where('clock_id', '=', merchant.userId).execute();
  assert.deepEqual(
    jobs.map((job) => JSON.parse(job.payload).request_id),
    [ids['1d']],
    'finished jobs are gone',
  );

  // an expired request cannot be deleted; a deleted one does not expire
  assertError(
    await api.delete(`/v1/requests/${ids['1m']}`),
    409,
    'conflict.invalid_state',
    'Cannot delete a request whose status is expired',
    { status: 'expired' },
  );
  await api.delete(`/v1/requests/${ids['1d']}`);
  await api.post('/v1/test-helpers/clock/advance', { seconds: 2 * 86400 });
  assert.equal(await statusOf(ids['1d']), 'deleted');
  assert.equal((await expiredEvents(app, merchant.userId)).length, 3);
});

async function listeningApp(t: Parameters<typeof buildTestApp>[0], overrides: Parameters<typeof buildTestApp>[1] = {}) {
  const app = await buildTestApp(t, overrides);
  // The pay test helper reaches the sandbox bank over HTTP at the service's own address.
  app.deps.config.publicBaseUrl = (await app.app.listen({ port: 0, host: '127.0.0.1' })).replace(
    'localhost',
    '127.0.0.1',
  );
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const request = (
    await api.post('/v1/requests', {
      bank_account_id: merchant.bankAccountId,
      message: 'Weekly beans',
      subscription_options: { amount: '4.00 NZD', period: 'weekly' },
      cust_info: { email: 'pat@example.com' },
    })
  ).body.request;
  const subscription = (await api.post(`/v1/test-helpers/requests/${request.id}/pay`, {})).body.subscription;
  return { app, api, subscription };
}

test('one advance runs at most TEST_CLOCK_MAX_JOBS jobs, saying when work remains', async (t) => {
  const { app, api, subscription } = await listeningApp(t, { testClockMaxJobs: 5 });
  const now = Date.parse((await api.get('/v1/test-helpers/clock')).body.clock.now);
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

test('one advance works at most TEST_CLOCK_MAX_SECONDS, saying when work remains, and nothing runs twice', async (t) => {
  // A millisecond: every call stops after its first slice of jobs.
  const { api, subscription } = await listeningApp(t, { testClockMaxSeconds: 0.001 });
  const now = Date.parse((await api.get('/v1/test-helpers/clock')).body.clock.now);
  const target = new Date(now + 365 * DAY).toISOString();
  const first = await api.post('/v1/test-helpers/clock/advance', { to: target });
  assert.equal(first.status, 200, first.text);
  assert.equal(first.body.work_remaining, true);
  assert.ok(Date.parse(first.body.clock.now) < Date.parse(target), 'the clock stopped where the work stopped');

  let calls = 1;
  let last = first;
  while (last.body.work_remaining) {
    last = await api.post('/v1/test-helpers/clock/advance', { to: target });
    calls++;
    assert.ok(calls < 400, 'advancing converges');
  }
  assert.ok(calls > 2, `${calls} calls`);
  assert.ok(Date.parse(last.body.clock.now) >= Date.parse(target));
  const done = (await api.get(`/v1/subscriptions/${subscription.id}`)).body.subscription;
  assert.equal(done.successful_charges, 53, 'a year of weekly charges, each once, the first at approval');
});

test('GET /subscriptions/{id}/payments lists every payment without limit (more than a page), and pages with one', async (t) => {
  const { api, subscription } = await listeningApp(t);
  const now = Date.parse((await api.get('/v1/test-helpers/clock')).body.clock.now);
  const advanced = await api.post('/v1/test-helpers/clock/advance', {
    to: new Date(now + 2 * 366 * DAY).toISOString(),
  });
  assert.equal(advanced.body.work_remaining, false);
  const all = await api.get(`/subscriptions/${subscription.id}/payments`);
  assert.equal(all.status, 200, all.text);
  assert.ok(all.body.payments.length > 100, `${all.body.payments.length} payments`);
  assert.equal(all.body.has_more, false);
  const page = await api.get(`/v1/subscriptions/${subscription.id}/payments`, { query: { limit: '10' } });
  assert.deepEqual([page.body.payments.length, page.body.has_more], [10, true]);
});

const YEAR_SECONDS = 365 * 86_400;
const CAP_MS = MAX_AHEAD_SECONDS * 1000;

const offsetOf = async (api: ApiClient): Promise<number> =>
  (await api.get('/v1/test-helpers/clock')).body.clock.offset_seconds;

/** An advance expected to pass the cap: the exact refusal, its latest time read against real time around the call. */
async function refusedPastCap(api: ApiClient, body: { to: string } | { seconds: number }) {
  const before = Date.now();
  const response = await api.post('/v1/test-helpers/clock/advance', body);
  const after = Date.now();
  assert.equal(response.status, 400, response.text);
  const { params } = response.body;
  const maximum = Date.parse(params.maximum);
  assert.ok(
    maximum >= before + CAP_MS && maximum <= after + CAP_MS,
    `maximum ${params.maximum} is not 20 years after real time`,
  );
  if ('to' in body) {
    assertError(
      response,
      400,
      'bad_request.invalid_param.to',
      `to may be at most 20 years ahead of real time: the test clock can be advanced to ${params.maximum} at the latest`,
      { field: 'to', now: params.now, maximum: params.maximum },
    );
  } else {
    assert.equal(params.maximum_seconds, Math.floor((maximum - Date.parse(params.now)) / 1000));
    assertError(
      response,
      400,
      'bad_request.invalid_param.seconds',
      `seconds would take the test clock more than 20 years ahead of real time: it can be advanced by at most ${params.maximum_seconds} seconds now, to ${params.maximum} at the latest`,
      { field: 'seconds', now: params.now, maximum: params.maximum, maximum_seconds: params.maximum_seconds },
    );
  }
  return { maximum: params.maximum as string, maximumSeconds: params.maximum_seconds as number | undefined };
}

test('the test clock may be at most 20 years ahead of real time: past that an advance is refused and moves nothing, by `to`, by `seconds` or by advances adding up', async (t) => {
  const app = await buildTestApp(t);
  assert.equal(MAX_AHEAD_SECONDS, 20 * 366 * 86_400);

  // in one go, either way, is refused and moves nothing
  const alice = apiClient(app, (await createTestMerchant(app)).testKey);
  await refusedPastCap(alice, { to: new Date(Date.now() + CAP_MS + 86_400_000).toISOString() });
  await refusedPastCap(alice, { to: '9999-12-31T00:00:00Z' });
  await refusedPastCap(alice, { seconds: MAX_AHEAD_SECONDS + 1 });
  await refusedPastCap(alice, { seconds: 1e15 });
  assert.equal(await offsetOf(alice), 0, 'refusals moved nothing');

  // up to the latest time a refusal gave works
  const { maximum } = await refusedPastCap(alice, { to: new Date(Date.now() + CAP_MS + 60_000).toISOString() });
  const atCap = await alice.post('/v1/test-helpers/clock/advance', { to: maximum });
  assert.equal(atCap.status, 200, atCap.text);
  assert.ok(Date.parse(atCap.body.clock.now) >= Date.parse(maximum));
  assert.ok(
    atCap.body.clock.offset_seconds <= MAX_AHEAD_SECONDS && atCap.body.clock.offset_seconds > MAX_AHEAD_SECONDS - 60,
    `${atCap.body.clock.offset_seconds} s ahead`,
  );
  // and at the cap, a minute more is too much
  await refusedPastCap(alice, { seconds: 60 });
  assert.ok((await offsetOf(alice)) <= MAX_AHEAD_SECONDS);

  // advances each far within the cap are refused from the one whose sum passes it
  const bob = apiClient(app, (await createTestMerchant(app)).testKey);
  for (let i = 0; i < 2; i++)
    assert.equal((await bob.post('/v1/test-helpers/clock/advance', { seconds: 8 * YEAR_SECONDS })).status, 200);
  const ahead = await offsetOf(bob);
  assert.ok(Math.abs(ahead - 16 * YEAR_SECONDS) <= 60, `${ahead} s ahead`);
  const { maximumSeconds } = await refusedPastCap(bob, { seconds: 8 * YEAR_SECONDS });
  await refusedPastCap(bob, { to: new Date(Date.now() + ahead * 1000 + 8 * YEAR_SECONDS * 1000).toISOString() });
  assert.equal(await offsetOf(bob), ahead, 'refused: the clock did not move');
  assert.ok(maximumSeconds! > 4 * YEAR_SECONDS && maximumSeconds! < 5 * YEAR_SECONDS, `${maximumSeconds} s left`);
  // the most the refusal allowed is allowed (real time has only moved on since)
  const rest = await bob.post('/v1/test-helpers/clock/advance', { seconds: maximumSeconds });
  assert.equal(rest.status, 200, rest.text);
  assert.ok(
    rest.body.clock.offset_seconds <= MAX_AHEAD_SECONDS && rest.body.clock.offset_seconds > MAX_AHEAD_SECONDS - 60,
    `${rest.body.clock.offset_seconds} s ahead`,
  );
  await refusedPastCap(bob, { seconds: 3600 });
});

test("the dashboard's test clock page says how far the clock may go when a move would pass the cap, and moves nothing", async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const zone = world.app.deps.config.serviceTimeZone;
  const browser = await logIn(world, kowhai);
  const page = await browser.request('/dashboard/test/clock');

  // a hundred days short of the cap, "+ 365 days" would pass it
  const near = await kowhai.test.post('/v1/test-helpers/clock/advance', { seconds: MAX_AHEAD_SECONDS - 100 * 86_400 });
  assert.equal(near.status, 200, near.text);
  const ahead = near.body.clock.offset_seconds;
  const refused = async (form: Record<string, string>) => {
    const before = Date.now();
    const response = await browser.request('/dashboard/test/clock', {
      form: { csrf: Browser.csrfOf(page.text), ...form },
    });
    const after = Date.now();
    assert.equal(response.status, 400, response.text.slice(0, 500));
    const shown =
      /The test clock can be at most 20 years ahead of real time, so it can move to (.+?) at the latest\. The clock did not move\./.exec(
        textOf(response.text),
      );
    assert.ok(shown, textOf(response.text).slice(0, 2000));
    assert.ok(
      [when(before + CAP_MS, zone), when(after + CAP_MS, zone)].includes(shown[1]),
      `${shown[1]} is not 20 years from now`,
    );
    assert.match(response.text, /aria-invalid="true" aria-describedby="clock-error"/);
  };
  await refused({ step: 'year' });
  await refused({ to: '2099-01-01T10:00' });
  assert.equal(await offsetOf(kowhai.test), ahead, 'refused: the clock did not move');

  // the page says so before anyone tries, and the date field stops at the cap
  const before = Date.now();
  const shown = await browser.request('/dashboard/test/clock');
  const after = Date.now();
  assert.match(textOf(shown.text), /It only moves forward, and at most 20 years ahead of real time\./);
  const local = (ms: number) => localAt(new Date(ms).toISOString(), zone).toFormat("yyyy-LL-dd'T'HH:mm");
  const max = /name="to" value="[^"]*" max="([^"]+)"/.exec(shown.text);
  assert.ok(max && [local(before + CAP_MS), local(after + CAP_MS)].includes(max[1]), `max ${max?.[1]}`);
});
