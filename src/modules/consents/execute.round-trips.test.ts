// The round trips an execution costs on PostgreSQL, where each is a write to the server's socket and
// a wait for its answer (docs/performance.md, "What a call costs on PostgreSQL"). Counted at pg's
// client: every statement the service awaits is a round trip; a BEGIN and the writes marked
// unawaited travel with the next one. SQLite has no round trips: skipped there.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { engine } from '../../../test/helpers.ts';
import { authorise, consentHarness } from '../../../test/support/consents.ts';
import { runPayerAccountJobs } from '../../../test/support/jobs.ts';
import { serviceStatements, type Statement } from '../../../test/support/round-trips.ts';

test('an execution on PostgreSQL is three round trips of its own and three reads sent with others: the key, the consent and the tax settings', {
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
  const shown = (list: Statement[]) => list.map((s) => s.text.replace(/\s+/g, ' ').slice(0, 60)).join('\n');
  // The consent has no payer account kept yet: the first payment's one-round-trip record fails at
  // its COMMIT, and the payment is locked, read and recorded with the job that asks the bank.
  let firstId = '';
  const firstStatements = await serviceStatements(async () => {
    const first = await execute('first');
    assert.equal(first.status, 201, first.text);
    assert.equal(first.body.payment.status, 'successful');
    firstId = first.body.payment.id;
  });
  const tried = firstStatements.findIndex((s) => s.text.includes('fail_unless_written'));
  const locked = firstStatements.findIndex((s) => /from "payments" where "id" = \$1 for update/.test(s.text));
  assert.ok(tried > 0 && locked > tried, shown(firstStatements));
  const firstEvents = await h.runtime.deps.db
    .selectFrom('events')
    .select('type')
    .where('object_id', '=', firstId)
    .execute();
  assert.deepEqual(firstEvents.map((e) => e.type).sort(), ['payment.created', 'payment.status_updated']);
  // The consent's payer account is kept once that job has asked the bank for it; later payments
  // take it in their update.
  assert.equal(await runPayerAccountJobs(h.runtime.deps.worker), 1);
  let paymentId = '';
  const statements = await serviceStatements(async () => {
    const second = await execute('second');
    assert.equal(second.status, 201);
    paymentId = second.body.payment.id;
  });
  const awaited = statements.filter((s) => s.awaited);
  // Two to reserve (the consent's lock with the BEGIN, the payment and its event; the COMMIT with
  // the counters and the audit record), one to record (the COMMIT, with the BEGIN, the update
  // guarded by the payment's status as it was reserved, and the outcome's event).
  const ownRoundTrips = awaited.filter((s) => s.inTransaction);
  assert.equal(ownRoundTrips.length, 3, shown(ownRoundTrips));
  assert.match(ownRoundTrips[0].text, /from "recurring_consents".* for update/s);
  assert.deepEqual(
    ownRoundTrips.slice(1).map((s) => s.text),
    ['commit', 'commit'],
  );
  const update = statements.findIndex((s) => /update "payments" .*fail_unless_written\(count\(\*\)\)/s.test(s.text));
  assert.ok(update > 0, shown(statements));
  assert.equal(statements[update - 1].text.toLowerCase(), 'begin', 'the update is the first of its transaction');
  assert.ok(!statements[update].awaited);
  // Plain reads outside any transaction go on the connections kept for them, with the other reads
  // of the moment (docs/store.md, "Reads outside a transaction").
  const reads = awaited.filter((s) => !s.inTransaction);
  assert.equal(reads.length, 3, shown(reads));
  for (const read of reads) assert.match(read.text, /^select /);
  assert.ok(
    reads.some((s) => s.text.includes('"recurring_consents"')),
    shown(reads),
  );
  assert.ok(
    reads.some((s) => s.text.includes('"tax_settings"')),
    shown(reads),
  );
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

test('an execution whose payment draws particulars already taken is reserved again with new ones, once', {
  skip: engine !== 'postgres',
}, async (t) => {
  const h = await consentHarness(t);
  const { token, consent } = await authorise(h, { period: 'monthly', max_per_period: '1000.00 NZD' });
  const execute = (key: string) => h.api.post('/v1/payments', { token, amount: '2.00 NZD', idempotency_key: key });
  const first = await execute('first');
  assert.equal(first.status, 201, first.text);
  const db = h.runtime.deps.db;
  const taken = await db
    .selectFrom('payments')
    .select('particulars')
    .where('id', '=', first.body.payment.id)
    .executeTakeFirstOrThrow();
  // The next payment's insert takes the first one's particulars, once: a sequence is not rolled
  // back with the transaction that drew from it.
  await sql`create sequence clash_once`.execute(db);
  await sql
    .raw(
      `create function take_particulars() returns trigger language plpgsql as $$
       begin
         if new.recurring_consent_id is not null and nextval('clash_once') = 1 then
           new.particulars := '${taken.particulars}';
         end if;
         return new;
       end $$`,
    )
    .execute(db);
  await sql`create trigger take_particulars before insert on payments for each row execute function take_particulars()`.execute(
    db,
  );

  const second = await execute('second');
  assert.equal(second.status, 201, second.text);
  const clashes = await sql<{ last_value: string }>`select last_value from clash_once`.execute(db);
  assert.equal(Number(clashes.rows[0].last_value), 2, 'the reservation ran twice');
  const payments = await db
    .selectFrom('payments')
    .select(['id', 'particulars', 'status'])
    .where('recurring_consent_id', '=', consent.id)
    .orderBy('created_at')
    .execute();
  assert.equal(payments.length, 2, 'one payment each, nothing of the rolled-back try');
  assert.equal(payments[1].id, second.body.payment.id);
  assert.notEqual(payments[1].particulars, taken.particulars);
  assert.equal(payments[1].status, 'successful');
  const created = await db
    .selectFrom('events')
    .select('id')
    .where('type', '=', 'payment.created')
    .where('object_id', 'in', [payments[0].id, payments[1].id])
    .execute();
  assert.equal(created.length, 2);
  const counted = await db
    .selectFrom('recurring_consents')
    .select(['used_count', 'used_cents'])
    .where('id', '=', consent.id)
    .executeTakeFirstOrThrow();
  assert.deepEqual({ ...counted, used_cents: Number(counted.used_cents) }, { used_count: 2, used_cents: 400 });
  const again = await execute('second');
  assert.equal(again.status, 200);
  assert.equal(again.body.payment.id, second.body.payment.id);
});
