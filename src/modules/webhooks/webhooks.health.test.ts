import { test } from 'node:test';
import assert from 'node:assert/strict';
import { apiClient, buildTestApp, createTestMerchant } from '../../../test/helpers.ts';
import { startReceiver } from '../../../test/support/webhook-receiver.ts';
import { startOneAttemptDispatcher } from '../../../test/support/webhook-dispatcher.ts';
import { disableLongFailingEndpoints, failingEndpoints, noticeFailingEndpoints } from './webhooks.health.ts';

const HOUR = 60 * 60_000;

test('an endpoint whose deliveries have all failed for 24 hours is mailed to its merchant, once per failing streak', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  let healthy = false;
  const receiver = await startReceiver(() => ({ status: healthy ? 204 : 500 }));
  t.after(() => receiver.close());
  startOneAttemptDispatcher(t, app);
  const hook = (await api.post('/v1/webhooks', { url: receiver.url })).body.webhook;
  await api.post('/v1/requests', { bank_account_id: merchant.bankAccountId, amount: '5.00 NZD', message: 'One' });
  await receiver.waitFor(1);
  await new Promise((resolve) => setTimeout(resolve, 200));

  const now = Date.now();
  assert.deepEqual(await failingEndpoints(app.deps, now + 23 * HOUR), [], 'not yet a day');
  const failing = await failingEndpoints(app.deps, now + 25 * HOUR);
  assert.deepEqual(
    failing.map((f) => f.id),
    [hook.id],
  );
  assert.equal(await noticeFailingEndpoints(app.deps, now + 25 * HOUR), 1);
  assert.equal(await noticeFailingEndpoints(app.deps, now + 26 * HOUR), 0, 'once per streak');
  const mail = await app.deps.db
    .selectFrom('mail_messages')
    .selectAll()
    .where('template', '=', 'webhook_failing')
    .execute();
  assert.equal(mail.length, 1);
  assert.equal(
    mail[0].to_address,
    (await app.deps.db.selectFrom('users').select('email').where('id', '=', merchant.userId).executeTakeFirstOrThrow())
      .email,
  );
  assert.equal(mail[0].related_id, hook.id);

  // a success ends the streak
  healthy = true;
  await api.post('/v1/requests', { bank_account_id: merchant.bankAccountId, amount: '5.00 NZD', message: 'Two' });
  await receiver.waitFor(2);
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.deepEqual(await failingEndpoints(app.deps, Date.now() + 25 * HOUR), []);
});

test('an endpoint whose deliveries have all failed for 3 days is disabled, with an event to the other endpoints and a mail', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const broken = await startReceiver(() => ({ status: 500 }));
  t.after(() => broken.close());
  startOneAttemptDispatcher(t, app);
  const hook = (await api.post('/v1/webhooks', { url: broken.url })).body.webhook;
  await api.post('/v1/requests', { bank_account_id: merchant.bankAccountId, amount: '5.00 NZD', message: 'One' });
  await broken.waitFor(1);
  await new Promise((resolve) => setTimeout(resolve, 200));
  // another endpoint, added later and taking what it is sent (so it has no failures of its own,
  // whenever the dispatcher delivers to it), hears about it
  const healthy = await startReceiver();
  t.after(() => healthy.close());
  const other = (await api.post('/v1/webhooks', { url: healthy.url, events: ['webhook_endpoint.disabled'] })).body
    .webhook;

  const now = Date.now();
  assert.equal(await disableLongFailingEndpoints(app.deps, now + 71 * HOUR), 0, 'not yet 3 days');
  assert.equal((await api.get(`/v1/webhooks/${hook.id}`)).body.webhook.disabled, false);
  assert.equal(await disableLongFailingEndpoints(app.deps, now + 73 * HOUR), 1);
  assert.equal(await disableLongFailingEndpoints(app.deps, now + 74 * HOUR), 0, 'once');
  assert.equal((await api.get(`/v1/webhooks/${hook.id}`)).body.webhook.disabled, true);

  const [event] = (await api.get('/v1/events', { query: { type: 'webhook_endpoint.disabled' } })).body.events;
  assert.deepEqual(Object.keys(event.data), ['id', 'url', 'disabled_at', 'failing_since']);
  assert.deepEqual([event.data.id, event.data.url], [hook.id, broken.url]);
  const deliveries = (await api.get(`/v1/events/${event.id}`)).body.deliveries;
  assert.deepEqual(
    deliveries.map((d: any) => d.webhook_id),
    [other.id],
    'the disabled endpoint is not sent its own notice',
  );
  const mail = await app.deps.db
    .selectFrom('mail_messages')
    .selectAll()
    .where('template', '=', 'webhook_disabled')
    .execute();
  assert.deepEqual(
    mail.map((m) => m.related_id),
    [hook.id],
  );

  // nothing new goes to it, and it is no longer reported as failing
  const request = await api.post('/v1/requests', {
    bank_account_id: merchant.bankAccountId,
    amount: '5.00 NZD',
    message: 'Two',
  });
  const created = (
    await api.get('/v1/events', { query: { object_id: request.body.request.id, type: 'request.created' } })
  ).body.events[0];
  assert.deepEqual(
    (await api.get(`/v1/events/${created.id}`)).body.deliveries,
    [],
    'the disabled endpoint gets nothing, the other does not take request.created',
  );
  assert.equal(
    (await failingEndpoints(app.deps, now + 80 * HOUR)).some((f) => f.id === hook.id),
    false,
    'a disabled endpoint is not reported as failing',
  );
});

test('an endpoint enabled again after being disabled starts a fresh streak: disabled again only after 3 days of new failures, with its own mail', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const broken = await startReceiver(() => ({ status: 500 }));
  t.after(() => broken.close());
  startOneAttemptDispatcher(t, app);
  const hook = (await api.post('/v1/webhooks', { url: broken.url })).body.webhook;
  const failOnce = async (message: string, count: number) => {
    await api.post('/v1/requests', { bank_account_id: merchant.bankAccountId, amount: '5.00 NZD', message });
    await broken.waitFor(count);
    await new Promise((resolve) => setTimeout(resolve, 200));
    return Date.now();
  };
  const disabledMails = async () =>
    (
      await app.deps.db
        .selectFrom('mail_messages')
        .select('related_id')
        .where('template', '=', 'webhook_disabled')
        .execute()
    ).map((mail) => mail.related_id);
  const disabledEvents = async () =>
    (await api.get('/v1/events', { query: { type: 'webhook_endpoint.disabled' } })).body.events;

  const firstStreak = await failOnce('One', 1);
  assert.equal(await disableLongFailingEndpoints(app.deps, firstStreak + 73 * HOUR), 1);
  const enabled = await api.patch(`/v1/webhooks/${hook.id}`, { disabled: false });
  assert.equal(enabled.body.webhook.disabled, false, enabled.text);
  assert.equal(
    await disableLongFailingEndpoints(app.deps, firstStreak + 74 * HOUR),
    0,
    'the failures before it was enabled no longer count',
  );
  assert.deepEqual(await failingEndpoints(app.deps, firstStreak + 74 * HOUR), []);
  assert.equal((await api.get(`/v1/webhooks/${hook.id}`)).body.webhook.disabled, false);

  const secondStreak = await failOnce('Two', 2);
  assert.equal(await noticeFailingEndpoints(app.deps, secondStreak + 23 * HOUR), 0, 'not yet a day of new failures');
  assert.equal(await noticeFailingEndpoints(app.deps, secondStreak + 25 * HOUR), 1, 'the new streak is reported');
  assert.equal(await disableLongFailingEndpoints(app.deps, secondStreak + 71 * HOUR), 0, 'not yet 3 days');
  assert.equal(await disableLongFailingEndpoints(app.deps, secondStreak + 73 * HOUR), 1);
  assert.equal((await api.get(`/v1/webhooks/${hook.id}`)).body.webhook.disabled, true);
  assert.deepEqual(await disabledMails(), [hook.id, hook.id], 'each disabling is mailed');
  const failingSince = (await disabledEvents()).map((event: any) => Date.parse(event.data.failing_since));
  assert.equal(failingSince.length, 2, 'each disabling sends its event');
  assert.ok(
    failingSince.some((since: number) => since < firstStreak) &&
      failingSince.some((since: number) => since > firstStreak),
    'the second streak began after it was enabled',
  );
});
