// The round trips an execution costs on PostgreSQL, where each is a write to the server's socket and
// a wait for its answer (docs/performance.md, "What a call costs on PostgreSQL"). Counted at pg's
// client: every statement the service awaits is a round trip; a BEGIN and the writes marked
// unawaited travel with the next one. SQLite has no round trips: skipped there.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { engine } from '../../../test/helpers.ts';
import { authorise, consentHarness } from '../../../test/support/consents.ts';
import { serviceStatements } from '../../../test/support/round-trips.ts';

test('an execution on PostgreSQL is eight round trips: the key, four to reserve, three to record', {
  skip: engine !== 'postgres',
}, async (t) => {
  const h = await consentHarness(t);
  const { token } = await authorise(h, { period: 'monthly', max_per_period: '1000.00 NZD' });
  // Two live endpoints, one of which takes no payment event: the fan-out reads them in SQL.
  const everything = await h.api.post('/v1/webhooks', { url: 'https://hooks.example.com/all' });
  const refundsOnly = await h.api.post('/v1/webhooks', {
    url: 'https://hooks.example.com/refunds',
    events: ['refund.created'],
  });
  assert.equal(everything.status, 201, everything.text);
  assert.equal(refundsOnly.status, 201, refundsOnly.text);
  const execute = (key: string) => h.api.post('/v1/payments', { token, amount: '1.00 NZD', idempotency_key: key });
  assert.equal((await execute('first')).status, 201);
  let paymentId = '';
  const statements = await serviceStatements(async () => {
    const second = await execute('second');
    assert.equal(second.status, 201);
    paymentId = second.body.payment.id;
  });
  const awaited = statements.filter((s) => s.awaited).map((s) => s.text.replace(/\s+/g, ' ').slice(0, 60));
  assert.equal(awaited.length, 8, awaited.join('\n'));
  assert.ok(
    statements.length > awaited.length,
    'the events, their deliveries, counters and audit record travel unawaited',
  );

  // Each of the payment's events went to the endpoint that takes it, with its job, in one statement.
  const db = h.runtime.deps.db;
  const events = await db.selectFrom('events').select(['id', 'type']).where('object_id', '=', paymentId).execute();
  assert.deepEqual(events.map((e) => e.type).sort(), ['payment.created', 'payment.status_updated']);
  const deliveries = await db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where(
      'event_id',
      'in',
      events.map((e) => e.id),
    )
    .execute();
  assert.equal(deliveries.length, 2);
  for (const delivery of deliveries) {
    assert.match(delivery.id, /^delivery_[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.equal(delivery.endpoint_id, everything.body.webhook.id);
    assert.equal(delivery.status, 'pending');
    const job = await db
      .selectFrom('jobs')
      .selectAll()
      .where('kind', '=', 'webhook.deliver')
      .where(sql<boolean>`payload::jsonb ->> 'delivery_id' = ${delivery.id}`)
      .executeTakeFirstOrThrow();
    assert.match(job.id, /^job_[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.deepEqual(JSON.parse(job.payload), { delivery_id: delivery.id, endpoint_id: delivery.endpoint_id });
    assert.equal(job.lane, 'webhook.deliver');
  }
});
