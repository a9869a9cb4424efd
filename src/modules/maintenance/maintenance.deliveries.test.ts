import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ulid } from 'ulid';
import { dashWorld, logIn, textOf } from '../../../test/dashboard.ts';
import { startReceiver } from '../../../test/support/webhook-receiver.ts';
import { DAY_MS } from '../../shared/time.ts';
import { pruneOnce } from './maintenance.service.ts';

// Webhook deliveries, with their attempts, are pruned 30 days after they were made, unless still
// pending; what they came to stays on their event, which the API and the dashboard show instead
// of "not delivered". On both engines (TEST_ENGINE=postgres for PostgreSQL).

test('deliveries older than 30 days are pruned with their attempts, and their events still show how they ended', async (t) => {
  const world = await dashWorld(t);
  const [merchant] = world.merchants;
  const receiver = await startReceiver();
  t.after(() => receiver.close());
  const endpoint = (await merchant.test.post('/v1/webhooks', { url: receiver.url })).body.webhook;
  const { db } = world.app.deps;
  const now = Date.now();

  // a delivery made now, through the service
  await merchant.test.post('/v1/requests', {
    bank_account_id: merchant.bankAccountId,
    message: 'Fresh',
    amount: '3.00 NZD',
  });
  const [fresh] = await receiver.waitFor(1);

  // Old events and deliveries as the service would have written them then: ids carry their time.
  const at = (daysAgo: number) => now - daysAgo * DAY_MS;
  const idAt = (prefix: string, time: number) => `${prefix}_${ulid(time)}`;
  const event = async (time: number) => {
    const id = idAt('event', time);
    const body = JSON.stringify({ id, type: 'request.created', created_at: new Date(time).toISOString(), data: {} });
    await db
      .insertInto('events')
      .values({
        id,
        user_id: merchant.userId,
        mode: 'test',
        type: 'request.created',
        object_id: 'request_x',
        body,
        created_at: time,
      })
      .execute();
    return id;
  };
  const delivery = async (
    eventId: string,
    time: number,
    status: 'succeeded' | 'failed' | 'pending',
    attempts: number,
  ) => {
    const id = idAt('delivery', time);
    const last = time + attempts * 1000;
    await db
      .insertInto('webhook_deliveries')
      .values({
        id,
        event_id: eventId,
        endpoint_id: endpoint.id,
        user_id: merchant.userId,
        mode: 'test',
        status,
        attempts,
        first_attempt_at: attempts > 0 ? time : null,
        last_attempt_at: attempts > 0 ? last : null,
        next_attempt_at: status === 'pending' ? last : null,
        failed_at: status === 'failed' ? last : null,
        succeeded_at: status === 'succeeded' ? last : null,
        superseded_by: null,
        created_at: time,
      })
      .execute();
    for (let attempt = 1; attempt <= attempts; attempt += 1)
      await db
        .insertInto('webhook_attempts')
        .values({
          id: idAt('attempt', time + attempt),
          delivery_id: id,
          attempt,
          started_at: time + attempt * 1000,
          latency_ms: 12,
          status_code: status === 'succeeded' && attempt === attempts ? 204 : 500,
          response_body: null,
          error: null,
        })
        .execute();
    return id;
  };
  // failed twice, then a resend arrived: both pruned
  const delivered = await event(at(40));
  await delivery(delivered, at(40), 'failed', 2);
  await delivery(delivered, at(39), 'succeeded', 1);
  // failed 35 days ago, and resent yesterday: the failure pruned, the resend kept
  const resent = await event(at(35));
  await delivery(resent, at(35), 'failed', 3);
  const kept = await delivery(resent, at(1), 'succeeded', 1);
  // still pending (its job stuck): kept whatever its age
  const stuck = await event(at(33));
  const pending = await delivery(stuck, at(33), 'pending', 1);
  // 29 days old: kept
  const recent = await event(at(29));
  const recentDelivery = await delivery(recent, at(29), 'failed', 2);

  const count = async (table: 'webhook_deliveries' | 'webhook_attempts') =>
    Number(
      (
        await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  const [deliveriesBefore, attemptsBefore] = [await count('webhook_deliveries'), await count('webhook_attempts')];
  assert.deepEqual(await pruneOnce(world.app.deps), {
    idempotency_keys: 0,
    jobs: 0,
    rate_buckets: 0,
    webhook_deliveries: 3,
  });
  assert.equal(await count('webhook_deliveries'), deliveriesBefore - 3);
  assert.equal(await count('webhook_attempts'), attemptsBefore - 6, 'their attempts with them');
  const left = (await db.selectFrom('webhook_deliveries').select('id').execute()).map((row) => row.id);
  for (const id of [kept, pending, recentDelivery]) assert.ok(left.includes(id), `${id} is kept`);
  assert.deepEqual(await pruneOnce(world.app.deps), {
    idempotency_keys: 0,
    jobs: 0,
    rate_buckets: 0,
    webhook_deliveries: 0,
  });

  // the API: no delivery kept, and what the pruned ones came to
  const old = (await merchant.test.get(`/v1/events/${delivered}`)).body;
  assert.deepEqual(old.deliveries, []);
  assert.equal(old.pruned_deliveries.kept_days, 30);
  assert.deepEqual(old.pruned_deliveries.webhooks, [
    {
      webhook_id: endpoint.id,
      status: 'succeeded',
      delivery_count: 2,
      attempt_count: 3,
      last_attempt_at: new Date(at(39) + 1000).toISOString(),
    },
  ]);
  const partly = (await merchant.test.get(`/v1/events/${resent}`)).body;
  assert.deepEqual(
    partly.deliveries.map((d: { id: string }) => d.id),
    [kept],
  );
  assert.deepEqual(
    partly.pruned_deliveries.webhooks.map((w: { status: string; attempt_count: number }) => [
      w.status,
      w.attempt_count,
    ]),
    [['failed', 3]],
  );
  assert.equal((await merchant.test.get(`/v1/events/${fresh.body.id}`)).body.pruned_deliveries, null);

  // the dashboard: delivered, not "no endpoint"; the event's page says what was pruned and how it ended
  const browser = await logIn(world, merchant);
  const list = textOf((await browser.request('/dashboard/test/events')).text);
  const rowOf = (id: string) => list.slice(list.indexOf(id), list.indexOf(id) + 120);
  assert.match(rowOf(delivered), /delivered 3 attempts record pruned/);
  assert.match(rowOf(resent), /delivered 4 attempts record pruned/, 'the resend that arrived is the newest');
  assert.match(rowOf(recent), /failed 2 attempts/);
  assert.doesNotMatch(rowOf(recent), /pruned/);
  const page = textOf((await browser.request(`/dashboard/test/events/${delivered}`)).text);
  assert.doesNotMatch(page, /Not delivered to any endpoint/);
  assert.match(
    page,
    /Delivery records are kept 30 days\. 2 deliveries of this event, with their attempts, were pruned on/,
  );
  assert.match(page, new RegExp(`${endpoint.id} succeeded 2 3`));
  const both = textOf((await browser.request(`/dashboard/test/events/${resent}`)).text);
  assert.match(both, new RegExp(`${endpoint.id} failed 1 3`));
  assert.match(both, /Deliveries made since, kept:/);
});
