import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  checkoutWorld,
  createRequest,
  eventsOf,
  returnToService,
  type CheckoutWorld,
} from '../../../test/flows/checkout.fixtures.ts';
import { hook } from '../../../test/support/banks.ts';
import { runRefundJobs } from '../../../test/support/refunds.ts';
import { NO_ORIGIN, type Ctx } from '../context.ts';
import { authoriseAtBank } from '../test-helpers/pay.bank-driver.ts';
import { readyAuthority, revokeAuthority, startAuthority } from './refunds.authority.ts';

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

/** "Turn on refunds" with these limits, approved (or declined) at the sandbox bank as the merchant. */
async function turnOn(
  world: CheckoutWorld,
  limits: { period: 'daily' | 'weekly' | 'monthly'; perRefund: number; perPeriod: number },
  decision: 'approve' | 'decline' = 'approve',
) {
  const started = await startAuthority(ctxOf(world), {
    bankId: 'sandbox',
    bankAccountId: world.merchant.bankAccountId,
    limits: { period: limits.period, max_per_refund_cents: limits.perRefund, max_per_period_cents: limits.perPeriod },
  });
  assert.ok(started.username, 'test mode names the sandbox account holder to sign in as');
  const back = await authoriseAtBank(started.authoriseUrl, decision, `${world.baseUrl}/pay/return`, {
    username: started.username,
  });
  return returnToService(back);
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
  const started = await startAuthority(ctxOf(world), {
    bankId: 'sandbox',
    bankAccountId: world.merchant.bankAccountId,
    limits: { period: 'daily', max_per_refund_cents: 500, max_per_period_cents: 500 },
  });
  const back = await authoriseAtBank(started.authoriseUrl, 'approve', `${world.baseUrl}/pay/return`, {
    username: started.username!,
  });
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

  // Refunds still go through under it.
  const payment = await paid(world, '12.50 NZD');
  const refund = (await world.api.post('/v1/refunds', { payment_id: payment.id, amount: '6.00 NZD' })).body.refund;
  await runRefundJobs(deps.worker);
  assert.equal((await world.api.get(`/v1/refunds/${refund.id}`)).body.refund.status, 'successful');
});
