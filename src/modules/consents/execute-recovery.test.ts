import assert from 'node:assert/strict';
import { test } from 'node:test';
import { consentsModule } from './consents.module.ts';
import { queueSettlesOfExecutionsInFlight, RECOVER_EXECUTIONS_JOB, SETTLE_EXECUTION_JOB } from './execute.service.ts';
import { authorise, consentHarness, execute, type ConsentHarness } from '../../../test/support/consents.ts';
import { hook, loseSubmissions, loseThenRefuseOnLimits } from '../../../test/support/banks.ts';
import { startReceiver } from '../../../test/support/webhook-receiver.ts';

// What becomes of an execution the service never recorded: the process died (or the record failed)
// while the bank call was under way. Nothing is queued per execution for this; a sweep every
// minute finds executions still in flight and gives each the settle job, which asks the bank again
// with the same x-idempotency-key. Runs on SQLite and on PostgreSQL (TEST_ENGINE).

const MINUTE = 60_000;

async function settleJobs(h: ConsentHarness) {
  const rows = await h.runtime.deps.db
    .selectFrom('jobs')
    .select(['dedupe_key', 'run_at', 'clock_id'])
    .where('kind', '=', SETTLE_EXECUTION_JOB)
    .execute();
  return rows.map((row) => ({ ...row, run_at: Number(row.run_at) }));
}

async function paymentOf(h: ConsentHarness, id: string) {
  return h.runtime.deps.db
    .selectFrom('payments')
    .select(['status', 'bank_payment_id'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
}

async function bankConsentOf(h: ConsentHarness, consentId: string): Promise<string> {
  return (
    await h.runtime.deps.db
      .selectFrom('recurring_consents')
      .select('bank_consent_id')
      .where('id', '=', consentId)
      .executeTakeFirstOrThrow()
  ).bank_consent_id;
}

async function bankPaymentsOf(h: ConsentHarness, consentId: string) {
  return h.runtime.deps.db
    .selectFrom('sandbox_payments')
    .select(['id', 'status'])
    .where('consent_id', '=', await bankConsentOf(h, consentId))
    .execute();
}

test('an execution recorded at once leaves no job behind; an unconfirmed one has its settle job, two minutes on', async (t) => {
  const h = await consentHarness(t);
  const { consent, token } = await authorise(h, { period: 'daily', max_per_period: '50.00 NZD' });
  const paid = await execute(h, token, '5.00 NZD', 'a');
  assert.equal(paid.body.payment.status, 'successful');
  assert.deepEqual(await settleJobs(h), [], 'nothing to settle');

  const delay = `${h.baseUrl}/sandbox-bank/test/consents/${await bankConsentOf(h, consent.id)}/delay`;
  assert.equal((await hook('POST', delay, {})).status, 200);
  const before = Date.now();
  const held = await execute(h, token, '6.00 NZD', 'b');
  assert.equal((await hook('POST', delay, { off: true })).status, 200);
  assert.equal(held.body.payment.status, 'unconfirmed');
  const jobs = await settleJobs(h);
  assert.equal(jobs.length, 1);
  assert.equal(jobs[0]!.dedupe_key, `${SETTLE_EXECUTION_JOB}:${held.body.payment.id}`);
  assert.equal(jobs[0]!.clock_id, h.merchant.userId, "on the merchant's test clock");
  assert.ok(
    jobs[0]!.run_at >= before + 2 * MINUTE && jobs[0]!.run_at <= Date.now() + 2 * MINUTE,
    'due two minutes after the outcome was recorded',
  );
});

test('an execution never recorded is found by the sweep and settled with the same idempotency key: one payment at the bank', async (t) => {
  const h = await consentHarness(t);
  const { consent, token } = await authorise(h, { period: 'daily', max_per_period: '50.00 NZD', total_count: 3 });
  const config = h.runtime.deps.config;
  const realBank = config.sandboxBankUrl;
  // A bank that takes the call and never answers it.
  const bank = await startReceiver(() => 'hang');
  t.after(() => bank.close());
  config.sandboxBankUrl = bank.url;

  // The bank never answers this one: the payment is reserved and the call under way, as in a
  // process that dies before the answer comes.
  const stuck = execute(h, token, '7.00 NZD', 'stuck');
  await bank.waitFor(1);
  const [inFlight] = await h.runtime.deps.db
    .selectFrom('payments')
    .select(['id', 'status', 'updated_at'])
    .where('recurring_consent_id', '=', consent.id)
    .where('idempotency_key', '=', 'stuck')
    .execute();
  assert.equal(inFlight!.status, 'awaiting-consent');
  assert.deepEqual(await settleJobs(h), [], 'no job is queued when an execution is reserved');

  // The sweep (what the recovery job runs every minute) queues its settle job, two minutes after
  // the reservation on the merchant's test clock.
  assert.equal(await queueSettlesOfExecutionsInFlight(h.runtime.deps), 1);
  assert.equal(await queueSettlesOfExecutionsInFlight(h.runtime.deps), 1, 'a second sweep finds it again');
  const jobs = await settleJobs(h);
  assert.equal(jobs.length, 1, 'and queues no second job');
  assert.equal(jobs[0]!.dedupe_key, `${SETTLE_EXECUTION_JOB}:${inFlight!.id}`);
  assert.equal(
    jobs[0]!.run_at,
    Number(inFlight!.updated_at) + 2 * MINUTE,
    'the test clock has not moved: its time is real time',
  );
  assert.equal((await paymentOf(h, inFlight!.id)).status, 'awaiting-consent', 'not due yet');
  assert.deepEqual(await bankPaymentsOf(h, consent.id), [], 'the bank has not taken it');

  // The bank is back; the merchant moves the test clock past the two minutes: the settle job submits
  // the payment with the same key, and the bank executes it once.
  config.sandboxBankUrl = realBank;
  const moved = await h.api.post('/v1/test-helpers/clock/advance', { seconds: 3 * 60 });
  assert.equal(moved.status, 200, moved.text);
  const settled = await paymentOf(h, inFlight!.id);
  assert.equal(settled.status, 'successful');
  const atBank = await bankPaymentsOf(h, consent.id);
  assert.equal(atBank.length, 1);
  assert.equal(settled.bank_payment_id, atBank[0]!.id);
  assert.deepEqual(await settleJobs(h), [], 'the settle job is done');
  const events = await h.runtime.deps.db
    .selectFrom('events')
    .select('body')
    .where('object_id', '=', inFlight!.id)
    .orderBy('id')
    .execute();
  assert.deepEqual(
    events.map((e) => JSON.parse(e.body).data.status),
    ['awaiting-consent', 'successful'],
  );

  // The call that never came back ends now; recording it changes nothing.
  await bank.close();
  const reply = await stuck;
  assert.equal(reply.body.payment?.status ?? reply.body.code, 'successful');
  assert.equal((await bankPaymentsOf(h, consent.id)).length, 1);
  const after = await h.runtime.deps.db
    .selectFrom('events')
    .select('id')
    .where('object_id', '=', inFlight!.id)
    .execute();
  assert.equal(after.length, 2, 'no further event');
  const read = await h.api.get(`/v1/recurring-consents/${consent.id}`);
  assert.equal(read.body.recurring_consent.usage.total.count, 1, 'counted once');
});

test('the sweep is one job for every process, due when a process starts, that asks to run again in a minute', async (t) => {
  const h = await consentHarness(t);
  await consentsModule.start!(h.runtime.deps);
  await consentsModule.start!(h.runtime.deps);
  const sweeps = await h.runtime.deps.db
    .selectFrom('jobs')
    .select(['run_at', 'clock_id'])
    .where('kind', '=', RECOVER_EXECUTIONS_JOB)
    .execute();
  assert.equal(sweeps.length, 1);
  assert.equal(sweeps[0]!.clock_id, null, 'real time, whatever the test clocks');
  assert.ok(consentsModule.jobs!.some((kind) => kind.name === RECOVER_EXECUTIONS_JOB));
  // A process that starts makes it due at once: it may be the one restarted after a crash.
  await h.runtime.deps.db
    .updateTable('jobs')
    .set({ run_at: Date.now() + 10 * MINUTE })
    .where('kind', '=', RECOVER_EXECUTIONS_JOB)
    .execute();
  const starting = Date.now();
  await consentsModule.start!(h.runtime.deps);
  const [due] = await h.runtime.deps.db
    .selectFrom('jobs')
    .select('run_at')
    .where('kind', '=', RECOVER_EXECUTIONS_JOB)
    .execute();
  assert.ok(Number(due!.run_at) >= starting && Number(due!.run_at) <= Date.now());

  // The worker runs it at once, and it puts itself a minute on.
  const before = Date.now();
  h.runtime.deps.worker.start();
  let runAt = 0;
  for (let waited = 0; waited < 10_000 && runAt < before + MINUTE; waited += 20) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    const row = await h.runtime.deps.db
      .selectFrom('jobs')
      .select('run_at')
      .where('kind', '=', RECOVER_EXECUTIONS_JOB)
      .executeTakeFirstOrThrow();
    runAt = Number(row.run_at);
  }
  assert.ok(runAt >= before + MINUTE && runAt <= Date.now() + MINUTE, 'ran, and is due again in a minute');
});

test('an execution the bank holds for two minutes is asked about, not submitted again, and successful once the bank settles it', async (t) => {
  const h = await consentHarness(t);
  const { consent, token } = await authorise(h, { period: 'daily', max_per_period: '50.00 NZD' });
  const delayed = await h.api.post(`/v1/test-helpers/recurring-consents/${consent.id}/delay`, { seconds: 120 });
  assert.equal(delayed.status, 200, delayed.text);
  const held = await execute(h, token, '6.00 NZD', 'held');
  assert.equal(held.body.payment.status, 'unconfirmed');
  const named = (await paymentOf(h, held.body.payment.id)).bank_payment_id;
  assert.ok(named, 'the bank took it and named it');

  // Past the hold and the settle job's two minutes, on the merchant's test clock.
  const moved = await h.api.post('/v1/test-helpers/clock/advance', { seconds: 3 * 60 });
  assert.equal(moved.status, 200, moved.text);
  assert.deepEqual(await paymentOf(h, held.body.payment.id), { status: 'successful', bank_payment_id: named });
  assert.deepEqual(
    (await bankPaymentsOf(h, consent.id)).map((p) => p.id),
    [named],
    'one payment at the bank',
  );
  assert.deepEqual(await settleJobs(h), [], 'the settle job is done');
  const read = await h.api.get(`/v1/recurring-consents/${consent.id}`);
  assert.equal(read.body.recurring_consent.usage.total.count, 1, 'counted once');
});

test('an execution never answered and sent again after the payer revoked at the bank stays unconfirmed and counted: the bank may hold it', async (t) => {
  const h = await consentHarness(t);
  const { consent, token } = await authorise(h, { period: 'daily', max_per_period: '50.00 NZD' });
  const { answered } = loseSubmissions(t, h.runtime, 1);
  const lost = await execute(h, token, '6.00 NZD', 'lost');
  assert.equal(lost.body.payment.status, 'unconfirmed');
  const revoked = await h.api.post(`/v1/test-helpers/recurring-consents/${consent.id}/revoke-at-bank`, {});
  assert.equal(revoked.status, 200, revoked.text);

  await h.api.post('/v1/test-helpers/clock/advance', { seconds: 3 * 60 });
  assert.ok(answered.length >= 1, 'sent again once the settle job was due');
  assert.ok(
    answered.every((answer) => !answer.ok && answer.reason === 'consent_revoked'),
    'refused under the revoked consent',
  );
  assert.deepEqual(await paymentOf(h, lost.body.payment.id), { status: 'unconfirmed', bank_payment_id: null });
  const read = (await h.api.get(`/v1/recurring-consents/${consent.id}`)).body.recurring_consent;
  assert.equal(read.status, 'revoked', 'the consent is over all the same');
  assert.equal(read.usage.total.count, 1, 'still counted against its limits');
});

test('an execution never answered and refused when sent again stays unconfirmed and counted: the refusal may be of a payment the bank made', async (t) => {
  const h = await consentHarness(t);
  const { consent, token } = await authorise(h, { period: 'daily', max_per_period: '50.00 NZD' });
  const sent = loseThenRefuseOnLimits(t, h.runtime);
  const lost = await execute(h, token, '6.00 NZD', 'lost');
  assert.equal(lost.body.payment.status, 'unconfirmed');
  await h.api.post('/v1/test-helpers/clock/advance', { seconds: 10 * 60 });
  assert.ok(sent.count >= 2, 'sent again once the settle job was due');
  assert.deepEqual(await paymentOf(h, lost.body.payment.id), { status: 'unconfirmed', bank_payment_id: null });
  const read = (await h.api.get(`/v1/recurring-consents/${consent.id}`)).body.recurring_consent;
  assert.deepEqual([read.status, read.usage.total.count], ['active', 1], 'still counted against its limits');
  assert.equal((await settleJobs(h)).length, 1, 'and asked about again');
});

test('an execution the bank never answers is sent again under its key for 23 hours, then no more', async (t) => {
  const h = await consentHarness(t);
  const { token } = await authorise(h, { period: 'daily', max_per_period: '50.00 NZD' });
  const { sentAt } = loseSubmissions(t, h.runtime, Number.POSITIVE_INFINITY);
  const lost = await execute(h, token, '6.00 NZD', 'lost');
  assert.equal(lost.body.payment.status, 'unconfirmed');
  const first = sentAt[0]!;
  // The bank is down for a day and more.
  await h.api.post('/v1/test-helpers/clock/advance', { seconds: 26 * 60 * 60 });
  assert.ok(sentAt.length > 10, `sent again while the bank keeps its key (${sentAt.length} times)`);
  const last = sentAt.at(-1)!;
  assert.ok(last - first < 23 * 60 * 60_000, 'never 23 hours after it was first sent');
  assert.ok(last - first > 22 * 60 * 60_000, 'and until then');
  assert.equal((await paymentOf(h, lost.body.payment.id)).status, 'unconfirmed', 'the bank may hold it');
  assert.deepEqual(await settleJobs(h), [], 'and no longer asked about');
});

test('a payment the bank named, and then will not say how it stands, stays unconfirmed, is asked again, and is logged as a warning', async (t) => {
  const h = await consentHarness(t);
  const { consent, token } = await authorise(h, { period: 'daily', max_per_period: '50.00 NZD' });
  const delayed = await h.api.post(`/v1/test-helpers/recurring-consents/${consent.id}/delay`, { seconds: 120 });
  assert.equal(delayed.status, 200, delayed.text);
  const held = await execute(h, token, '6.00 NZD', 'held');
  const named = (await paymentOf(h, held.body.payment.id)).bank_payment_id;
  assert.ok(named, 'the bank took it and named it');

  const connector = h.runtime.deps.banks.connectorFor('sandbox', 'test')!;
  t.mock.method(connector, 'getPaymentStatus', async () => ({
    ok: false,
    reason: 'not_found',
    message: 'The bank answered 404',
    unknown: false,
  }));
  const warned: unknown[][] = [];
  t.mock.method(h.runtime.deps.log, 'warn', (...args: unknown[]) => warned.push(args));
  const moved = await h.api.post('/v1/test-helpers/clock/advance', { seconds: 3 * 60 });
  assert.equal(moved.status, 200, moved.text);

  assert.deepEqual(await paymentOf(h, held.body.payment.id), { status: 'unconfirmed', bank_payment_id: named });
  assert.equal((await settleJobs(h)).length, 1, 'still asked about');
  const refusal = warned.find(([, message]) => String(message).startsWith('the bank would not say'));
  assert.ok(refusal, 'a warning names the refusal');
  assert.deepEqual(
    { ...(refusal[0] as object) },
    {
      payment_id: held.body.payment.id,
      recurring_consent_id: consent.id,
      bank_payment_id: named,
      reason: 'not_found',
      bank_code: undefined,
    },
  );
});
