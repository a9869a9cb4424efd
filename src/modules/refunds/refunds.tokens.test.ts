import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import {
  checkoutWorld,
  createRequest,
  returnToService,
  type CheckoutWorld,
} from '../../../test/flows/checkout.fixtures.ts';
import { hook } from '../../../test/support/banks.ts';
import { runRefundJobs } from '../../../test/support/refunds.ts';
import { NO_ORIGIN, type Ctx } from '../context.ts';
import { authoriseAtBank } from '../test-helpers/pay.bank-driver.ts';
import { observeBankExchanges, type BankExchange } from '../banks/open-banking.http.ts';
import { readyAuthority, startAuthority } from './refunds.authority.ts';

// A refund authority's consent token that the merchant's bank lets expire (docs/banks.md, "Consent
// tokens that expire"): the sandbox bank's expire-tokens hook ends the access token as time would,
// and its refresh tokens rotate on every use. Over HTTP, on both engines (TEST_ENGINE=postgres).

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

async function setUp(t: TestContext) {
  const world = await checkoutWorld(t);
  const { deps } = world.app;
  const seen: BankExchange[] = [];
  t.after(observeBankExchanges((exchange) => seen.push(exchange)));
  const calls = () =>
    seen.map((e) => {
      const grant = (e.requestBody as { grant_type?: string } | undefined)?.grant_type;
      return [e.method, new URL(e.url).pathname.replace(/^.*\/sandbox-bank/, ''), e.status, ...(grant ? [grant] : [])];
    });
  const authorityRow = (id: string) =>
    deps.db.selectFrom('refund_authorities').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  /** The active authority, with its sandbox consent made now rather than by the first refund. */
  const activeAuthority = async () => {
    const { id } = (await world.api.get('/v1/refund-authority')).body.refund_authority;
    const ready = await readyAuthority(deps, await authorityRow(id));
    return { id: id as string, consentId: ready.authority.bank_consent_id! };
  };
  const expireAtBank = async (consentId: string, refresh = false) => {
    const reply = await hook('POST', `${world.baseUrl}/sandbox-bank/test/consents/${consentId}/expire-tokens`, {
      refresh_tokens: refresh,
    });
    assert.equal(reply.status, 200, reply.text);
  };
  const payment = async () => {
    const request = await createRequest(world, { amount: '20.00 NZD' });
    const paid = (await world.api.post(`/v1/test-helpers/requests/${request.id}/pay`, {})).body.payment;
    await runRefundJobs(deps.worker); // the payer's account, kept
    return paid as { id: string };
  };
  const refund = async (paymentId: string, amount = '1.00 NZD') => {
    const created = await world.api.post('/v1/refunds', { payment_id: paymentId, amount });
    assert.equal(created.status, 201, created.text);
    await runRefundJobs(deps.worker);
    return (await world.api.get(`/v1/refunds/${created.body.refund.id}`)).body.refund as {
      id: string;
      status: string;
      action_reason: string | null;
    };
  };
  /** "Turn on refunds" again, approved at the sandbox bank as the merchant: the new authority. */
  const turnOn = async () => {
    const started = await startAuthority(ctxOf(world), {
      bankId: 'sandbox',
      bankAccountId: world.merchant.bankAccountId,
      limits: { period: 'monthly', max_per_refund_cents: 100_000, max_per_period_cents: 1_000_000 },
    });
    const back = await authoriseAtBank(started.authoriseUrl, 'approve', `${world.baseUrl}/pay/return`, {
      username: started.username!,
    });
    assert.equal(await returnToService(back), '/dashboard/test/refunds/authority?outcome=approved');
    return activeAuthority();
  };
  const open = (sealed: string | null) => deps.secrets.open(sealed!);
  return { world, deps, seen, calls, authorityRow, activeAuthority, expireAtBank, payment, refund, turnOn, open };
}

test('a refund after the authority’s access token expired renews it once, is sent again under the same key, and the rotated refresh token is kept sealed', async (t) => {
  const s = await setUp(t);
  const paid = await s.payment();
  const authority = await s.activeAuthority();
  const before = await s.authorityRow(authority.id);
  assert.match(before.bank_refresh_token ?? '', /^sealed:v1:/, 'kept from the code exchange');
  await s.expireAtBank(authority.consentId);

  s.seen.splice(0);
  const refund = await s.refund(paid.id);
  assert.equal(refund.status, 'successful');
  assert.deepEqual(s.calls(), [
    ['POST', '/domestic-payments', 401],
    ['POST', '/token', 200, 'refresh_token'],
    ['POST', '/domestic-payments', 201],
  ]);
  const [refused, renewal, sent] = s.seen;
  assert.equal(refused!.requestHeaders['x-idempotency-key'], refund.id);
  assert.equal(sent!.requestHeaders['x-idempotency-key'], refund.id, 'the same key');
  assert.deepEqual(sent!.requestBody, refused!.requestBody, 'the same body');
  const answer = renewal!.responseBody as { access_token: string; refresh_token: string };
  const after = await s.authorityRow(authority.id);
  assert.match(after.bank_access_token ?? '', /^sealed:v1:/);
  assert.match(after.bank_refresh_token ?? '', /^sealed:v1:/);
  assert.equal(s.open(after.bank_access_token), answer.access_token);
  assert.equal(s.open(after.bank_refresh_token), answer.refresh_token);
  assert.notEqual(answer.refresh_token, s.open(before.bank_refresh_token), 'rotated');

  // An authority the merchant approves at its bank keeps its refresh token too, and renews with it.
  const approved = await s.turnOn();
  assert.match((await s.authorityRow(approved.id)).bank_refresh_token ?? '', /^sealed:v1:/);
  await s.expireAtBank(approved.consentId);
  assert.equal((await s.refund(paid.id)).status, 'successful');
});

test('a renewal the merchant’s bank refuses ends the authority as a revocation there does, whatever the bank says of the consent; a refund sent before asks the merchant', async (t) => {
  const s = await setUp(t);
  const paid = await s.payment();
  const outcome = async (authorityId: string) => {
    const refund = await s.refund(paid.id);
    const row = await s.authorityRow(authorityId);
    return { refund: [refund.status, refund.action_reason], authority: [row.status, row.revoked_by] };
  };

  // Revoked at the bank: the refund is refused for it before it was ever sent.
  const revoked = await s.activeAuthority();
  assert.equal(
    (await hook('POST', `${s.world.baseUrl}/sandbox-bank/test/consents/${revoked.consentId}/revoke`)).status,
    200,
  );
  const asRevoked = await outcome(revoked.id);
  assert.deepEqual(asRevoked, { refund: ['requires_action', 'no_refund_authority'], authority: ['revoked', 'bank'] });

  // Still Authorised at the bank, but its access token expired and its renewal refused.
  const refused = await s.turnOn();
  await s.expireAtBank(refused.consentId, true);
  s.seen.splice(0);
  assert.deepEqual(await outcome(refused.id), asRevoked);
  assert.deepEqual(s.calls(), [
    ['POST', '/domestic-payments', 401],
    ['POST', '/token', 400, 'refresh_token'],
    ['GET', `/enduring-payment-consents/${refused.consentId}`, 200],
  ]);

  // Sent before (its answer lost), then refused at the renewal when sent again: the merchant is
  // asked to look for it before paying it by hand.
  const lostUnder = await s.turnOn();
  const connector = s.deps.banks.connectorFor('sandbox', 'test')!;
  const submit = connector.submitPayment.bind(connector);
  let lose = true;
  t.mock.method(connector, 'submitPayment', async (input: Parameters<typeof submit>[0]) => {
    if (!lose) return submit(input);
    lose = false;
    return { ok: false, reason: 'timeout', message: 'no answer in 10 s', unknown: true };
  });
  const created = await s.world.api.post('/v1/refunds', { payment_id: paid.id, amount: '1.00 NZD' });
  await runRefundJobs(s.deps.worker);
  assert.equal((await s.world.api.get(`/v1/refunds/${created.body.refund.id}`)).body.refund.status, 'pending');
  await s.expireAtBank(lostUnder.consentId, true);
  await s.deps.db.updateTable('jobs').set({ run_at: 0 }).where('kind', '=', 'refund.execute').execute();
  s.seen.splice(0);
  await runRefundJobs(s.deps.worker);
  assert.deepEqual(s.calls(), [
    ['POST', '/domestic-payments', 401],
    ['POST', '/token', 400, 'refresh_token'],
    ['GET', `/enduring-payment-consents/${lostUnder.consentId}`, 200],
  ]);
  const asked = (await s.world.api.get(`/v1/refunds/${created.body.refund.id}`)).body.refund;
  assert.deepEqual([asked.status, asked.action_reason], ['requires_action', 'bank_outcome_unknown']);
  const row = await s.authorityRow(lostUnder.id);
  assert.deepEqual([row.status, row.revoked_by], ['revoked', 'bank']);
});
