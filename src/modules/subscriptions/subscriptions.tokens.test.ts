// A subscription's consent token that the bank lets expire (docs/banks.md, "Consent tokens that
// expire"): the sandbox bank's expire-tokens hook ends the access token as time would, and its
// refresh tokens rotate on every use. On a listening app built on buildTestApp, over HTTP: SQLite
// and PostgreSQL (TEST_ENGINE).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { subscriptionsOverApi } from '../../../test/support/subscriptions.ts';
import { hook } from '../../../test/support/banks.ts';
import { observeBankExchanges, type BankExchange } from '../banks/open-banking.http.ts';

const DAY = 86_400_000;
const WEEKLY = { amount: '15.00 NZD', period: 'weekly' };

async function setUp(t: TestContext) {
  const world = await subscriptionsOverApi(t);
  const db = world.app.deps.db;
  const row = (id: string) =>
    db
      .selectFrom('subscriptions')
      .select(['status', 'cancelled_by', 'bank_consent_id', 'bank_access_token', 'bank_refresh_token'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
  /** The sandbox bank's hook: the consent's access tokens expire now (with `refresh`, its refresh tokens are revoked). */
  const expireAtBank = async (id: string, refresh = false) => {
    const reply = await hook(
      'POST',
      `${world.app.baseUrl}/sandbox-bank/test/consents/${(await row(id)).bank_consent_id}/expire-tokens`,
      { refresh_tokens: refresh },
    );
    assert.equal(reply.status, 200, reply.text);
  };
  const seen: BankExchange[] = [];
  t.after(observeBankExchanges((exchange) => seen.push(exchange)));
  const calls = () =>
    seen.map((e) => {
      const grant = (e.requestBody as { grant_type?: string } | undefined)?.grant_type;
      return [e.method, new URL(e.url).pathname.replace(/^.*\/sandbox-bank/, ''), e.status, ...(grant ? [grant] : [])];
    });
  /** A weekly subscription whose first charge, at approval, has been made. */
  const charged = async () => {
    const { sub } = await world.subscribe(WEEKLY);
    await world.advanceTo((await world.clockNow()) + 1000);
    assert.deepEqual(
      (await world.payments(sub.id)).map((p) => p.status),
      ['successful'],
    );
    return sub;
  };
  const open = (sealed: string | null) => world.app.deps.secrets.open(sealed!);
  return { ...world, row, expireAtBank, seen, calls, charged, open };
}

test('a charge after the access token expired renews it once, sends it again under the same key, and keeps the rotated refresh token sealed', async (t) => {
  const s = await setUp(t);
  const sub = await s.charged();
  const before = await s.row(sub.id);
  assert.match(before.bank_refresh_token ?? '', /^sealed:v1:/);
  await s.expireAtBank(sub.id);

  s.seen.splice(0);
  await s.advanceTo((await s.clockNow()) + 7 * DAY);
  const [second] = await s.payments(sub.id); // newest first
  assert.equal(second.status, 'successful');
  assert.equal((await s.get(sub.id)).successful_charges, 2);
  assert.deepEqual(s.calls().slice(0, 3), [
    ['POST', '/domestic-payments', 401],
    ['POST', '/token', 200, 'refresh_token'],
    ['POST', '/domestic-payments', 201],
  ]);
  const [refused, renewal, sent] = s.seen;
  assert.equal(refused!.requestHeaders['x-idempotency-key'], second.id);
  assert.equal(sent!.requestHeaders['x-idempotency-key'], second.id);
  assert.deepEqual(sent!.requestBody, refused!.requestBody);
  const answer = renewal!.responseBody as { access_token: string; refresh_token: string };
  const after = await s.row(sub.id);
  assert.match(after.bank_refresh_token ?? '', /^sealed:v1:/);
  assert.equal(s.open(after.bank_refresh_token), answer.refresh_token);
  assert.notEqual(s.open(after.bank_refresh_token), s.open(before.bank_refresh_token), 'rotated');
  assert.equal(s.open(after.bank_access_token), answer.access_token);
});

test('a renewal the bank refuses ends the subscription as a withdrawal at the bank does when the bank says the consent ended; one it still holds fails the charge only; sent before, its payment stays unconfirmed', async (t) => {
  const s = await setUp(t);
  const outcome = async (id: string) => {
    const sub = await s.get(id);
    const [last] = await s.payments(id); // newest first
    return {
      subscription: [sub.status, sub.cancelled_by],
      payment: [last.status, last.failure_reason ?? null],
    };
  };

  // The payer withdrew the consent at the bank: the next charge is refused for it.
  const withdrawn = await s.charged();
  assert.equal((await s.api.post(`/v1/test-helpers/subscriptions/${withdrawn.id}/cancel-at-bank`, {})).status, 200);
  // The consent still Authorised at the bank, its access token expired and its renewal refused.
  const refused = await s.charged();
  await s.expireAtBank(refused.id, true);
  await s.advanceTo((await s.clockNow()) + 7 * DAY);
  const asWithdrawn = await outcome(withdrawn.id);
  assert.deepEqual(asWithdrawn, {
    subscription: ['cancelled', 'bank'],
    payment: ['failed', 'consent_revoked'],
  });
  // Still authorised at the bank (a refresh token lost with a renewal's answer): the charge fails,
  // the subscription goes on (its retries), and the error log asks for it to be authorised again.
  assert.deepEqual(await outcome(refused.id), {
    subscription: ['active', null],
    payment: ['failed', 'consent_token_refused'],
  });

  // Sent before with its answer lost, then refused at the renewal when sent again: unconfirmed.
  const lost = await s.charged();
  // Only this subscription's next charge loses its answer (the others' retries run meanwhile).
  const connector = s.app.deps.banks.connectorFor('sandbox', 'test')!;
  const submit = connector.submitPayment.bind(connector);
  let losing = true;
  t.mock.method(connector, 'submitPayment', async (input: Parameters<typeof submit>[0]) => {
    if (!losing || input.trace?.subscription_id !== lost.id) return submit(input);
    losing = false;
    return { ok: false, reason: 'timeout', message: 'no answer in 10 s', unknown: true };
  });
  await s.advanceTo(Date.parse((await s.get(lost.id)).next_charge_at) + 1000);
  assert.equal((await s.payments(lost.id))[0].status, 'awaiting-consent', 'no answer yet: in flight');
  await s.expireAtBank(lost.id, true);
  s.seen.splice(0);
  await s.advanceTo((await s.clockNow()) + 60_000);
  assert.deepEqual(s.calls().slice(0, 2), [
    ['POST', '/domestic-payments', 401],
    ['POST', '/token', 400, 'refresh_token'],
  ]);
  assert.deepEqual(
    await outcome(lost.id),
    { subscription: ['active', null], payment: ['unconfirmed', null] },
    'not failed on that word; without a token it cannot be asked again: the operator has the bank’s word',
  );
});
