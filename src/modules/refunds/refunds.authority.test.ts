import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import {
  checkoutWorld,
  createRequest,
  eventsOf,
  returnToService,
  type CheckoutWorld,
} from '../../../test/flows/checkout.fixtures.ts';
import { parse } from 'csv-parse/sync';
import { logInAs, textOf } from '../../../test/dashboard.ts';
import { hook, loseThenRefuseOnLimits, sandboxBalanceOf } from '../../../test/support/banks.ts';
import { runRefundJobs } from '../../../test/support/refunds.ts';
import { NO_ORIGIN, type Ctx } from '../context.ts';
import { authoriseAtBank } from '../test-helpers/pay.bank-driver.ts';
import { readyAuthority, revokeAuthority, sandboxHolderOf, startAuthority } from './refunds.authority.ts';

// The merchant's refund authority: approved at its bank through the same redirect a payer uses,
// its limits applied to every refund when it is created, its changes sent as events, and refunds
// requiring action once it is turned off. On both engines (TEST_ENGINE=postgres for PostgreSQL).

function ctxOf(world: CheckoutWorld): Ctx {
  const { deps } = world.app;
  return {
    deps,
    db: deps.db,
    merchant: { id: world.merchant.userId, name: 'Kōwhai Coffee' },
    mode: 'test',
    clock: deps.clock,
    log: deps.log,
    actor: { kind: 'operator', name: 'test' },
    origin: NO_ORIGIN,
  };
}

type Limits = { period: 'daily' | 'weekly' | 'monthly'; perRefund: number; perPeriod: number };

/** "Turn on refunds" with these limits, approved (or declined) at the sandbox bank as the merchant: the bank's return URL. */
async function decidedAtBank(world: CheckoutWorld, limits: Limits, decision: 'approve' | 'decline' = 'approve') {
  const started = await startAuthority(ctxOf(world), {
    bankId: 'sandbox',
    bankAccountId: world.merchant.bankAccountId,
    limits: { period: limits.period, max_per_refund_cents: limits.perRefund, max_per_period_cents: limits.perPeriod },
  });
  assert.ok(started.username, 'test mode names the sandbox account holder to sign in as');
  return authoriseAtBank(started.authoriseUrl, decision, `${world.baseUrl}/pay/return`, {
    username: started.username,
  });
}

/** The same, back at the service: where it sends the merchant's browser. */
async function turnOn(world: CheckoutWorld, limits: Limits, decision: 'approve' | 'decline' = 'approve') {
  return returnToService(await decidedAtBank(world, limits, decision));
}

async function paid(world: CheckoutWorld, amount: string) {
  const request = await createRequest(world, { amount });
  return (await world.api.post(`/v1/test-helpers/requests/${request.id}/pay`, {})).body.payment as { id: string };
}

test('a refund authority the merchant approves at its bank replaces the first; its limits refuse what is over them', async (t) => {
  const world = await checkoutWorld(t);
  const first = (await world.api.get('/v1/refund-authority')).body.refund_authority;
  assert.equal(first.period, 'monthly');
  assert.equal(first.max_per_refund.value, '10000.00 NZD');
  assert.equal(first.account_number, null, 'the sandbox account is opened by the first refund');

  assert.equal(
    await turnOn(world, { period: 'weekly', perRefund: 500, perPeriod: 800 }),
    '/dashboard/test/refunds/authority?outcome=approved',
  );
  const authority = (await world.api.get('/v1/refund-authority')).body.refund_authority;
  assert.notEqual(authority.id, first.id);
  assert.equal(authority.period, 'weekly');
  assert.deepEqual([authority.max_per_refund.value, authority.max_per_period.value], ['5.00 NZD', '8.00 NZD']);
  assert.match(authority.account_number, /^\d{2}-\d{4}-\d{7}-\d{2}$/);
  assert.deepEqual(
    (await eventsOf(world))
      .filter((e) => e.type === 'refund_authority.status_updated')
      .map((e) => [e.data.id, e.data.status, e.data.revoked_by]),
    [
      [first.id, 'revoked', 'replaced'],
      [authority.id, 'active', null],
    ],
  );

  const payment = await paid(world, '20.00 NZD');
  const refund = (amount: string) => world.api.post('/v1/refunds', { payment_id: payment.id, amount });
  const tooBig = await refund('6.00 NZD');
  assert.equal(tooBig.status, 422);
  assert.equal(tooBig.body.code, 'refund_rejected.max_per_refund');
  assert.equal(tooBig.body.params.limit.value, '5.00 NZD');
  assert.equal((await refund('5.00 NZD')).status, 201);
  const overPeriod = await refund('4.00 NZD');
  assert.equal(overPeriod.status, 422);
  assert.equal(overPeriod.body.code, 'refund_rejected.max_per_period');
  assert.equal(overPeriod.body.params.remaining.value, '3.00 NZD');
  assert.equal(overPeriod.body.params.period, 'weekly');
  // one the bank refuses stops counting against the authority
  await runRefundJobs(world.app.deps.worker);
  assert.equal((await world.api.post('/v1/test-helpers/refunds/decline-next', { count: 1 })).status, 200);
  const declined = (await refund('3.00 NZD')).body.refund;
  await runRefundJobs(world.app.deps.worker);
  assert.equal((await world.api.get(`/v1/refunds/${declined.id}`)).body.refund.status, 'failed');
  assert.equal((await world.api.get('/v1/refund-authority')).body.refund_authority.used_this_period.value, '5.00 NZD');
  assert.equal((await refund('3.00 NZD')).status, 201);
  // refused refunds changed nothing
  assert.equal((await world.api.get(`/v1/payments/${payment.id}`)).body.payment.amount_refunded.value, '8.00 NZD');
  assert.equal((await world.api.get('/v1/refund-authority')).body.refund_authority.used_this_period.value, '8.00 NZD');

  await runRefundJobs(world.app.deps.worker);
  const refunds = (await world.api.get(`/v1/refunds?payment_id=${payment.id}`)).body.refunds;
  assert.deepEqual(
    refunds.map((r: { status: string }) => r.status),
    ['successful', 'failed', 'successful'],
  );
});

test('with refunds turned off a refund requires action; a declined approval changes nothing', async (t) => {
  const world = await checkoutWorld(t);
  const first = (await world.api.get('/v1/refund-authority')).body.refund_authority;
  await revokeAuthority(ctxOf(world), first.id);
  assert.equal((await world.api.get('/v1/refund-authority')).body.refund_authority, null);
  const revoked = (await eventsOf(world, first.id)).map((e) => [e.type, e.data.status, e.data.revoked_by]);
  assert.deepEqual(revoked, [['refund_authority.status_updated', 'revoked', 'merchant']]);

  const payment = await paid(world, '12.50 NZD');
  const created = await world.api.post('/v1/refunds', { payment_id: payment.id, amount: '2.50 NZD' });
  assert.equal(created.status, 201);
  assert.equal(created.body.refund.status, 'requires_action');
  assert.equal(created.body.refund.action_reason, 'no_refund_authority');
  await runRefundJobs(world.app.deps.worker);
  assert.equal((await world.api.get(`/v1/refunds/${created.body.refund.id}`)).body.refund.status, 'requires_action');
  assert.deepEqual(
    (await eventsOf(world, created.body.refund.id)).map((e) => [e.type, e.data.status]),
    [['refund.created', 'requires_action']],
  );
  // still counted against the payment: the merchant pays it by hand
  assert.equal((await world.api.get(`/v1/payments/${payment.id}`)).body.payment.amount_refunded.value, '2.50 NZD');

  assert.equal(
    await turnOn(world, { period: 'daily', perRefund: 100, perPeriod: 100 }, 'decline'),
    '/dashboard/test/refunds/authority?outcome=declined',
  );
  assert.equal((await world.api.get('/v1/refund-authority')).body.refund_authority, null);
  const declined = (await eventsOf(world)).filter((e) => e.type === 'refund_authority.status_updated').at(-1);
  assert.equal(declined?.data.status, 'declined');
});

/** The merchant's first (test-mode) authority, with its sandbox consent made now rather than by the first refund. */
async function firstAuthorityAtBank(world: CheckoutWorld) {
  const { deps } = world.app;
  const first = (await world.api.get('/v1/refund-authority')).body.refund_authority;
  const row = await deps.db
    .selectFrom('refund_authorities')
    .selectAll()
    .where('id', '=', first.id)
    .executeTakeFirstOrThrow();
  return { id: first.id as string, consentId: (await readyAuthority(deps, row)).authority.bank_consent_id! };
}

test('a refund the bank took before the authority was replaced is followed there until it settles, never requiring action', async (t) => {
  const world = await checkoutWorld(t);
  const { deps } = world.app;
  const bank = `${world.baseUrl}/sandbox-bank/test`;
  const payment = await paid(world, '12.50 NZD');
  await runRefundJobs(deps.worker); // the payer's account, kept
  const first = await firstAuthorityAtBank(world);
  assert.equal((await hook('POST', `${bank}/consents/${first.consentId}/delay`, {})).status, 200);
  const refund = (await world.api.post('/v1/refunds', { payment_id: payment.id, amount: '4.00 NZD' })).body.refund;
  await runRefundJobs(deps.worker);
  const held = await deps.db
    .selectFrom('refunds')
    .select(['status', 'bank_payment_id'])
    .where('id', '=', refund.id)
    .executeTakeFirstOrThrow();
  assert.equal(held.status, 'pending');
  assert.ok(held.bank_payment_id, 'the bank took it and holds it');

  // Before the job runs again, the merchant approves a new authority: the first is revoked, here and at the bank.
  assert.equal(
    await turnOn(world, { period: 'weekly', perRefund: 10_000, perPeriod: 10_000 }),
    '/dashboard/test/refunds/authority?outcome=approved',
  );
  const makeDue = () => deps.db.updateTable('jobs').set({ run_at: 0 }).where('kind', '=', 'refund.execute').execute();
  await makeDue();
  await runRefundJobs(deps.worker);
  const asked = (await world.api.get(`/v1/refunds/${refund.id}`)).body.refund;
  assert.equal(asked.status, 'pending', 'still at the bank: not for the merchant to pay by hand');
  assert.equal(asked.action_reason, null);

  assert.equal((await hook('POST', `${bank}/payments/${held.bank_payment_id}/release`, {})).status, 200);
  await makeDue();
  await runRefundJobs(deps.worker);
  assert.equal((await world.api.get(`/v1/refunds/${refund.id}`)).body.refund.status, 'successful');
  assert.deepEqual(
    (await eventsOf(world, refund.id)).map((e) => [e.type, e.data.status]),
    [
      ['refund.created', 'pending'],
      ['refund.status_updated', 'successful'],
    ],
  );
  assert.equal((await world.api.get(`/v1/payments/${payment.id}`)).body.payment.amount_refunded.value, '4.00 NZD');
});

test('a second return from the bank for one approval (a refresh) that settles it first leaves the authority before active', async (t) => {
  const world = await checkoutWorld(t);
  const { deps } = world.app;
  const first = await firstAuthorityAtBank(world);
  const back = await decidedAtBank(world, { period: 'daily', perRefund: 500, perPeriod: 500 });
  // The refresh arrives while the first return is between its code exchange and its approval. The
  // code is single use: the refresh's exchange fails, and it records the new authority declined.
  const connector = deps.banks.connectorFor('sandbox', 'test')!;
  const exchange = connector.exchangeCode.bind(connector);
  let refresh: Promise<string> | undefined;
  t.mock.method(connector, 'exchangeCode', async (input: Parameters<typeof exchange>[0]) => {
    const token = await exchange(input);
    if (!refresh) {
      refresh = returnToService(back);
      await refresh;
    }
    return token;
  });

  const answer = await returnToService(back);
  assert.equal(await refresh, '/dashboard/test/refunds/authority?outcome=declined');
  assert.equal(answer, '/dashboard/test/refunds/authority?outcome=declined', 'the outcome the authority has');
  assert.equal((await world.api.get('/v1/refund-authority')).body.refund_authority?.id, first.id);
  assert.deepEqual(
    (await eventsOf(world))
      .filter((e) => e.type === 'refund_authority.status_updated')
      .map((e) => [e.data.id === first.id ? 'first' : 'new', e.data.status]),
    [['new', 'declined']],
  );
  const atBank = await connector.getConsent({ consentId: first.consentId, kind: 'enduring' });
  assert.deepEqual(atBank, { ok: true, status: 'Authorised' }, 'not revoked at the bank');
  const declined = await deps.db
    .selectFrom('refund_authorities')
    .select('bank_consent_id')
    .where('status', '=', 'declined')
    .executeTakeFirstOrThrow();
  assert.deepEqual(
    await connector.getConsent({ consentId: declined.bank_consent_id!, kind: 'enduring' }),
    { ok: true, status: 'Revoked' },
    'the consent the bank approved for the declined one is handed back',
  );

  // Refunds still go through under it.
  const payment = await paid(world, '12.50 NZD');
  const refund = (await world.api.post('/v1/refunds', { payment_id: payment.id, amount: '6.00 NZD' })).body.refund;
  await runRefundJobs(deps.worker);
  assert.equal((await world.api.get(`/v1/refunds/${refund.id}`)).body.refund.status, 'successful');
});

/** The connector's submissions lose their answer: the first `lose` reach the bank (or not), and say only "timeout". */
function loseAnswers(t: TestContext, world: CheckoutWorld, lose: 'after the bank' | 'before the bank') {
  const connector = world.app.deps.banks.connectorFor('sandbox', 'test')!;
  const submit = connector.submitPayment.bind(connector);
  const sent: Array<Awaited<ReturnType<typeof submit>>> = [];
  let losing = true;
  t.mock.method(connector, 'submitPayment', async (input: Parameters<typeof submit>[0]) => {
    if (!losing) {
      const answer = await submit(input);
      sent.push(answer);
      return answer;
    }
    losing = false;
    if (lose === 'after the bank') sent.push(await submit(input));
    return { ok: false, reason: 'timeout', message: 'no answer in 10 s', unknown: true };
  });
  return sent;
}

const refundRow = (world: CheckoutWorld, id: string) =>
  world.app.deps.db
    .selectFrom('refunds')
    .select(['status', 'action_reason', 'bank_payment_id', 'submitted_at'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();

const makeRefundsDue = (world: CheckoutWorld) =>
  world.app.deps.db.updateTable('jobs').set({ run_at: 0 }).where('kind', '=', 'refund.execute').execute();

test('a refund whose answer was lost is sent again under its key and authority after refunds are turned off: paid once', async (t) => {
  const world = await checkoutWorld(t);
  const { deps } = world.app;
  const payment = await paid(world, '12.50 NZD');
  await runRefundJobs(deps.worker); // the payer's account, kept
  const first = await firstAuthorityAtBank(world);
  const merchantHolder = sandboxHolderOf(world.merchant.userId);
  const sent = loseAnswers(t, world, 'after the bank');

  const refund = (await world.api.post('/v1/refunds', { payment_id: payment.id, amount: '4.00 NZD' })).body.refund;
  await runRefundJobs(deps.worker);
  const lost = await refundRow(world, refund.id);
  assert.equal(lost.status, 'pending');
  assert.equal(lost.bank_payment_id, null, 'the bank’s answer never came');
  assert.ok(lost.submitted_at, 'the sending was recorded before the call');
  assert.equal(sent.length, 1);
  const afterLost = await sandboxBalanceOf(world.baseUrl, merchantHolder);

  // The merchant turns refunds off before the job runs again: revoked here and at the bank.
  await revokeAuthority(ctxOf(world), first.id);
  assert.equal((await world.api.get('/v1/refund-authority')).body.refund_authority, null);
  await makeRefundsDue(world);
  await runRefundJobs(deps.worker);

  const done = await refundRow(world, refund.id);
  assert.equal(done.status, 'successful', 'the bank answered the same key with the payment it made');
  assert.equal(done.action_reason, null, 'never for the merchant to pay by hand');
  assert.ok(sent[0]?.ok && sent[1]?.ok && sent[1].paymentId === sent[0].paymentId, 'one payment at the bank');
  assert.equal(done.bank_payment_id, sent[0]?.ok ? sent[0].paymentId : null);
  assert.equal(
    await sandboxBalanceOf(world.baseUrl, merchantHolder),
    afterLost,
    'the money left the merchant’s account once',
  );
  assert.deepEqual(
    (await eventsOf(world, refund.id)).map((e) => [e.type, e.data.status]),
    [
      ['refund.created', 'pending'],
      ['refund.status_updated', 'successful'],
    ],
  );
});

test('a refund sent without an answer is never sent again once the bank refuses its authority or a day has passed', async (t) => {
  const world = await checkoutWorld(t);
  const { deps } = world.app;
  const payment = await paid(world, '12.50 NZD');
  await runRefundJobs(deps.worker);
  const first = await firstAuthorityAtBank(world);
  const sent = loseAnswers(t, world, 'before the bank');

  // Lost before it reached the bank, then refunds turned off: the bank refuses the key under the
  // revoked consent. The refund may not be at the bank, but a bank may also look at the consent
  // before its keys, so the merchant is asked to check its account, not told to pay.
  const refund = (await world.api.post('/v1/refunds', { payment_id: payment.id, amount: '4.00 NZD' })).body.refund;
  await runRefundJobs(deps.worker);
  assert.equal((await refundRow(world, refund.id)).status, 'pending');
  await revokeAuthority(ctxOf(world), first.id);
  await makeRefundsDue(world);
  await runRefundJobs(deps.worker);
  assert.equal(sent.length, 1, 'sent again once, under the revoked consent');
  assert.equal(sent[0]?.ok, false);
  const refused = (await world.api.get(`/v1/refunds/${refund.id}`)).body.refund;
  assert.deepEqual([refused.status, refused.action_reason], ['requires_action', 'bank_outcome_unknown']);
  assert.equal((await world.api.get(`/v1/payments/${payment.id}`)).body.payment.amount_refunded.value, '4.00 NZD');

  // With a new authority, a refund whose answer stays lost for 23 hours is not sent again: the bank
  // keeps a key for 24, after which the same key could make a second payment.
  assert.equal(
    await turnOn(world, { period: 'weekly', perRefund: 10_000, perPeriod: 10_000 }),
    '/dashboard/test/refunds/authority?outcome=approved',
  );
  const late = (await world.api.post('/v1/refunds', { payment_id: payment.id, amount: '2.00 NZD' })).body.refund;
  const submitted = deps.clock.now() - 23 * 60 * 60_000;
  await deps.db.updateTable('refunds').set({ submitted_at: submitted }).where('id', '=', late.id).execute();
  await runRefundJobs(deps.worker);
  assert.equal(sent.length, 1, 'not sent');
  const unknown = (await world.api.get(`/v1/refunds/${late.id}`)).body.refund;
  assert.deepEqual([unknown.status, unknown.action_reason], ['requires_action', 'bank_outcome_unknown']);

  // The dashboard asks the merchant to look in its account, and leaves both out of the bank's batch file.
  const { email } = await deps.db
    .selectFrom('users')
    .select('email')
    .where('id', '=', world.merchant.userId)
    .executeTakeFirstOrThrow();
  const browser = await logInAs(world, email);
  const page = textOf((await browser.request('/dashboard/test/refunds/action')).text);
  for (const id of [refund.id, late.id])
    assert.match(
      page,
      new RegExp(`${id} .+? Your bank never answered whether it made this refund: look for it in your account`),
    );
  assert.match(page, /0 of 2 refunds, those whose payer’s account is known and that your bank has not already paid/);
  const batch = parse((await browser.request('/dashboard/test/refunds/action.csv')).text);
  assert.equal(batch.length, 1, 'the header alone');
});

test('a refund sent without an answer and refused when sent again stays pending: the refusal may be of a refund the bank made', async (t) => {
  const world = await checkoutWorld(t);
  const { deps } = world.app;
  const payment = await paid(world, '12.50 NZD');
  await runRefundJobs(deps.worker);
  await firstAuthorityAtBank(world);
  const sent = loseThenRefuseOnLimits(t, world.app);
  const refund = (await world.api.post('/v1/refunds', { payment_id: payment.id, amount: '4.00 NZD' })).body.refund;
  await runRefundJobs(deps.worker);
  await makeRefundsDue(world);
  await runRefundJobs(deps.worker);
  assert.equal(sent.count, 2, 'sent again under its key');
  assert.equal((await refundRow(world, refund.id)).status, 'pending', 'not failed on that word');
  assert.equal((await world.api.get(`/v1/payments/${payment.id}`)).body.payment.amount_refunded.value, '4.00 NZD');
});

test('a bank return whose code the bank gave for another consent approves nothing', async (t) => {
  const world = await checkoutWorld(t);
  const { deps } = world.app;
  const first = await firstAuthorityAtBank(world);
  const back = await decidedAtBank(world, { period: 'daily', perRefund: 500, perPeriod: 500 });
  // The bank's token answers for a consent other than the one this state's authority asked for.
  const connector = deps.banks.connectorFor('sandbox', 'test')!;
  const exchange = connector.exchangeCode.bind(connector);
  t.mock.method(connector, 'exchangeCode', async (input: Parameters<typeof exchange>[0]) => {
    const token = await exchange(input);
    return token.ok ? { ...token, consentId: first.consentId } : token;
  });
  assert.equal(await returnToService(back), '/dashboard/test/refunds/authority?outcome=declined');
  assert.equal((await world.api.get('/v1/refund-authority')).body.refund_authority?.id, first.id, 'the first stays');
  const declined = await deps.db
    .selectFrom('refund_authorities')
    .select(['status', 'bank_access_token'])
    .where('status', '!=', 'active')
    .execute();
  assert.deepEqual(declined, [{ status: 'declined', bank_access_token: null }], 'no token kept for it');
});
