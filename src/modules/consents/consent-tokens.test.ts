import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import pino from 'pino';
import { sql } from 'kysely';
import { apiClient, engine, testConfig } from '../../../test/helpers.ts';
import { createRuntime } from '../../runtime.ts';
import { authorise, consentHarness, execute, type ConsentHarness } from '../../../test/support/consents.ts';
import { hook, loseSubmissions } from '../../../test/support/banks.ts';
import { observeBankExchanges, type BankExchange } from '../banks/open-banking.http.ts';
import type { BankConnector } from '../banks/bank-connector.ts';
import { replaceConsentBankToken } from './consents.repo.ts';

// A recurring consent's access token that the bank lets expire (docs/banks.md, "Consent tokens that
// expire"), through the mounted sandbox bank over HTTP: its expire-tokens hook ends the tokens as
// time would, its token-lifetime hook makes them expire with expires_in, and its refresh tokens
// rotate on every use. Runs on SQLite and on PostgreSQL (TEST_ENGINE).

const WEEKLY = { period: 'weekly', max_per_period: '100.00 NZD' } as const;

async function consentRow(h: ConsentHarness, id: string) {
  return h.runtime.deps.db
    .selectFrom('recurring_consents')
    .select([
      'status',
      'revoked_by',
      'bank_consent_id',
      'bank_access_token',
      'bank_refresh_token',
      'bank_token_expires_at',
    ])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
}

const open = (h: ConsentHarness, sealed: string | null) => h.runtime.deps.secrets.open(sealed!);

/** The sandbox bank's hook: the consent's access tokens expire now (and with `refresh`, its refresh tokens are revoked). */
async function expireAtBank(h: ConsentHarness, bankConsentId: string, refresh = false) {
  const reply = await hook('POST', `${h.baseUrl}/sandbox-bank/test/consents/${bankConsentId}/expire-tokens`, {
    refresh_tokens: refresh,
  });
  assert.equal(reply.status, 200, reply.text);
}

/** Every exchange with the sandbox bank from now to the end of the test, as [method, path, status, grant]. */
function watchBank(t: TestContext) {
  const seen: BankExchange[] = [];
  t.after(observeBankExchanges((exchange) => seen.push(exchange)));
  const calls = () =>
    seen.map((e) => {
      const grant = (e.requestBody as { grant_type?: string } | undefined)?.grant_type;
      return [e.method, new URL(e.url).pathname.replace(/^.*\/sandbox-bank/, ''), e.status, ...(grant ? [grant] : [])];
    });
  return { seen, calls, clear: () => seen.splice(0) };
}

/** Every table of the service's database, as text, for a secret that must not be there in clear. */
async function everyRow(h: ConsentHarness): Promise<string> {
  const db = h.runtime.deps.db;
  const tables =
    engine === 'postgres'
      ? (
          await sql<{
            name: string;
          }>`select table_name as name from information_schema.tables where table_schema = current_schema()`.execute(db)
        ).rows
      : (await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(db)).rows;
  let text = '';
  for (const { name } of tables) {
    const rows = await sql<Record<string, unknown>>`select * from ${sql.table(name)}`.execute(db);
    text += JSON.stringify(rows.rows);
  }
  return text;
}

test('an execution after the access token expired renews it once and sends the same body again under the same key; the rotated refresh token is kept sealed, in clear nowhere', async (t) => {
  const h = await consentHarness(t);
  const { consent, token } = await authorise(h, WEEKLY);
  const before = await consentRow(h, consent.id);
  assert.match(
    before.bank_refresh_token ?? '',
    /^sealed:v1:/,
    'the refresh token from the code exchange is kept sealed',
  );
  assert.equal(before.bank_token_expires_at, null, 'the sandbox bank gave no expiry');
  const firstRefresh = open(h, before.bank_refresh_token);
  await expireAtBank(h, before.bank_consent_id);

  const bank = watchBank(t);
  const paid = await execute(h, token, '5.00 NZD', 'after-expiry');
  assert.equal(paid.status, 201, paid.text);
  assert.equal(paid.body.payment.status, 'successful');
  assert.deepEqual(bank.calls(), [
    ['POST', '/domestic-payments', 401],
    ['POST', '/token', 200, 'refresh_token'],
    ['POST', '/domestic-payments', 201],
  ]);
  const [refused, renewal, sent] = bank.seen;
  assert.equal(refused!.requestHeaders['x-idempotency-key'], paid.body.payment.id);
  assert.equal(sent!.requestHeaders['x-idempotency-key'], paid.body.payment.id, 'the same key');
  assert.deepEqual(sent!.requestBody, refused!.requestBody, 'the same body');
  assert.notEqual(sent!.requestHeaders.authorization, refused!.requestHeaders.authorization);
  assert.equal((renewal!.requestBody as Record<string, string>).refresh_token, firstRefresh);

  // What the bank answered is what is kept, sealed: the new access token and the rotated refresh token.
  const answer = renewal!.responseBody as { access_token: string; refresh_token: string };
  assert.notEqual(answer.refresh_token, firstRefresh, 'rotated');
  const after = await consentRow(h, consent.id);
  assert.match(after.bank_access_token, /^sealed:v1:/);
  assert.match(after.bank_refresh_token ?? '', /^sealed:v1:/);
  assert.equal(open(h, after.bank_access_token), answer.access_token);
  assert.equal(open(h, after.bank_refresh_token), answer.refresh_token);
  const everything = await everyRow(h);
  const logs = h.logs.join('');
  for (const [name, secret] of Object.entries({
    'the new access token': answer.access_token,
    'the rotated refresh token': answer.refresh_token,
    'the first refresh token': firstRefresh,
  })) {
    assert.ok(!everything.includes(secret), `${name} is in clear in the database`);
    assert.ok(!logs.includes(secret), `${name} is in the logs`);
  }

  // The renewed token serves the next execution as it is.
  bank.clear();
  assert.equal((await execute(h, token, '6.00 NZD', 'next')).body.payment.status, 'successful');
  assert.deepEqual(bank.calls(), [['POST', '/domestic-payments', 201]]);
});

test('an access token known to expire within a minute is renewed before the payment is sent', async (t) => {
  const h = await consentHarness(t);
  const lifetime = await hook('POST', `${h.baseUrl}/sandbox-bank/test/token-lifetime`, { enduring_seconds: 30 });
  assert.equal(lifetime.status, 200, lifetime.text);
  const authorisedAt = Date.now();
  const { consent, token } = await authorise(h, WEEKLY);
  const before = await consentRow(h, consent.id);
  assert.ok(
    before.bank_token_expires_at! >= authorisedAt + 30_000 && before.bank_token_expires_at! <= Date.now() + 30_000,
    'the expiry the bank gave (expires_in) is kept',
  );

  const bank = watchBank(t);
  const paid = await execute(h, token, '5.00 NZD', 'soon-expired');
  assert.equal(paid.body.payment.status, 'successful', paid.text);
  assert.deepEqual(bank.calls(), [
    ['POST', '/token', 200, 'refresh_token'],
    ['POST', '/domestic-payments', 201],
  ]);
  const after = await consentRow(h, consent.id);
  assert.ok(after.bank_token_expires_at! > before.bank_token_expires_at!, 'the new expiry is kept');
  assert.notEqual(after.bank_refresh_token, before.bank_refresh_token);
});

test('a renewal the bank refuses ends the consent as a revocation at the bank does when the bank says it ended; one it still holds stays, its payment refused', async (t) => {
  const h = await consentHarness(t);
  const outcome = async (consentId: string, token: string, key: string) => {
    const paid = await execute(h, token, '5.00 NZD', key);
    assert.equal(paid.status, 201, paid.text);
    const row = await consentRow(h, consentId);
    const again = await execute(h, token, '5.00 NZD', `${key}-again`);
    return {
      payment: [paid.body.payment.status, paid.body.payment.failure_reason],
      consent: [row.status, row.revoked_by],
      next: [again.status, again.body.code],
    };
  };

  // As a revocation at the bank: the payer revoked, and the charge is refused for it.
  const revoked = await authorise(h, WEEKLY);
  const atBank = await h.api.post(`/v1/test-helpers/recurring-consents/${revoked.consent.id}/revoke-at-bank`, {});
  assert.equal(atBank.status, 200, atBank.text);
  const asRevoked = await outcome(revoked.consent.id, revoked.token, 'revoked');
  assert.deepEqual(asRevoked, {
    payment: ['failed', 'consent_revoked'],
    consent: ['revoked', 'bank'],
    next: [422, 'payment_rejected.consent_revoked'],
  });

  // The consent still Authorised at the bank, but its access token expired and its refresh refused
  // (a refresh token lost with a renewal's answer): the payment is refused, the consent is not ended.
  const refused = await authorise(h, WEEKLY);
  await expireAtBank(h, (await consentRow(h, refused.consent.id)).bank_consent_id, true);
  const bank = watchBank(t);
  const paid = await execute(h, refused.token, '5.00 NZD', 'refused');
  assert.deepEqual(
    [paid.status, paid.body.payment.status, paid.body.payment.failure_reason],
    [201, 'failed', 'consent_token_refused'],
  );
  const row = await consentRow(h, refused.consent.id);
  assert.deepEqual([row.status, row.revoked_by], ['active', null], 'still authorised at the bank');
  const calls = bank.calls();
  assert.deepEqual(calls.slice(0, 2), [
    ['POST', '/domestic-payments', 401],
    ['POST', '/token', 400, 'refresh_token'],
  ]);
  assert.ok(
    calls.some(
      ([method, path, status]) =>
        method === 'GET' && String(path).startsWith('/enduring-payment-consents/') && status === 200,
    ),
    'the bank was asked how the consent stands',
  );
  assert.equal(
    calls.filter(([, path]) => path === '/domestic-payments').length,
    1,
    'nothing sent again after the refusal',
  );

  // Revoked at the bank and its token expired: the refusal comes at the renewal.
  const both = await authorise(h, WEEKLY);
  await h.api.post(`/v1/test-helpers/recurring-consents/${both.consent.id}/revoke-at-bank`, {});
  await expireAtBank(h, (await consentRow(h, both.consent.id)).bank_consent_id);
  assert.deepEqual(await outcome(both.consent.id, both.token, 'both'), asRevoked);

  const events = await h.runtime.deps.db
    .selectFrom('events')
    .select(['object_id', 'type'])
    .where('type', 'like', 'recurring_payment.%')
    .where('type', '!=', 'recurring_payment.authorised')
    .execute();
  assert.deepEqual(events, [], 'a consent found ended at the bank sends no revocation event, as before');
});

test('a payment sent before whose renewal is refused when it is sent again stays unconfirmed', async (t) => {
  const h = await consentHarness(t);
  const { consent, token } = await authorise(h, WEEKLY);
  const { sentAt } = loseSubmissions(t, h.runtime, 1);
  const lost = await execute(h, token, '7.00 NZD', 'lost');
  assert.equal(lost.body.payment.status, 'unconfirmed', lost.text);
  await expireAtBank(h, (await consentRow(h, consent.id)).bank_consent_id, true);

  const bank = watchBank(t);
  const moved = await h.api.post('/v1/test-helpers/clock/advance', { seconds: 3 * 60 });
  assert.equal(moved.status, 200, moved.text);
  assert.ok(sentAt.length >= 2, 'the settle job sent it again');
  // Each time it is sent again (the job asks again while it is unconfirmed), under the same key.
  const calls = bank.calls();
  assert.ok(calls.length >= 2);
  const sendings = calls.filter(([, path]) => path === '/domestic-payments');
  assert.ok(sendings.every(([, , status]) => status === 401));
  assert.equal(
    calls.filter(([, path, status, grant]) => path === '/token' && status === 400 && grant === 'refresh_token').length,
    sendings.length,
    'each sending renewed once, refused',
  );
  assert.ok(
    bank.seen.every(
      (e) => !e.url.endsWith('/domestic-payments') || e.requestHeaders['x-idempotency-key'] === lost.body.payment.id,
    ),
  );
  const payment = (await h.api.get(`/v1/payments/${lost.body.payment.id}`)).body.payment;
  assert.equal(payment.status, 'unconfirmed', 'never failed: the first sending may have been taken');
  assert.deepEqual(
    [(await consentRow(h, consent.id)).status, (await consentRow(h, consent.id)).revoked_by],
    ['active', null],
    'still authorised at the bank',
  );
});

test('two processes renewing at once: the one the bank refuses for the spent refresh token uses the winner’s; the rotated token is kept', async (t) => {
  const h = await consentHarness(t);
  const { consent, token } = await authorise(h, WEEKLY);
  const bankConsentId = (await consentRow(h, consent.id)).bank_consent_id;
  // A second service on the same database and bank: another process.
  const other = await createRuntime(testConfig({ workers: false }), {
    db: h.testDb.db,
    log: pino({ level: 'silent' }),
  });
  t.after(() => other.app.close());
  other.deps.config.publicBaseUrl = h.baseUrl;
  const otherApi = apiClient(other, h.merchant.testKey);
  await expireAtBank(h, bankConsentId);

  // Both find the token expired (401); this process renews first and saves only once the other's
  // renewal, with the same (now spent) refresh token, has been refused.
  const gate = <T>() => {
    let resolve!: (value: T) => void;
    return { promise: new Promise<T>((r) => (resolve = r)), resolve };
  };
  const firstAnswered = gate<void>();
  const secondRefused = gate<void>();
  const renewals: Array<{ who: string; ok: boolean; refreshToken?: string | null }> = [];
  const intercept = (
    connector: BankConnector,
    who: string,
    around: (renew: () => Promise<unknown>) => Promise<unknown>,
  ) => {
    const renew = connector.refreshConsentToken.bind(connector);
    t.mock.method(connector, 'refreshConsentToken', (input: Parameters<typeof renew>[0]) =>
      around(async () => {
        const result = await renew(input);
        renewals.push({ who, ok: result.ok, ...(result.ok && { refreshToken: result.refreshToken }) });
        return result;
      }),
    );
  };
  intercept(h.runtime.deps.banks.connectorFor('sandbox', 'test')!, 'first', async (renew) => {
    const result = await renew();
    firstAnswered.resolve();
    await secondRefused.promise;
    return result;
  });
  intercept(other.deps.banks.connectorFor('sandbox', 'test')!, 'second', async (renew) => {
    await firstAnswered.promise;
    const result = await renew();
    secondRefused.resolve();
    return result;
  });

  const [mine, theirs] = await Promise.all([
    execute(h, token, '5.00 NZD', 'first'),
    otherApi.post('/v1/payments', { token, amount: '6.00 NZD', idempotency_key: 'second' }),
  ]);
  assert.equal(mine.body.payment.status, 'successful', mine.text);
  assert.equal(theirs.body.payment.status, 'successful', theirs.text);
  assert.deepEqual(
    renewals.map((r) => [r.who, r.ok]),
    [
      ['first', true],
      ['second', false],
    ],
  );
  const kept = await consentRow(h, consent.id);
  assert.equal(
    open(h, kept.bank_refresh_token),
    renewals[0]!.refreshToken,
    'the rotated refresh token is the one kept',
  );
  assert.equal(kept.status, 'active');
  // The save compares on the token it replaces: one saved over it since is never overwritten.
  const stale = { access: h.runtime.deps.secrets.seal('stale'), refresh: null, expiresAt: null };
  assert.equal(await replaceConsentBankToken(h.runtime.deps.db, consent.id, stale.access, stale), false);
  assert.equal((await consentRow(h, consent.id)).bank_refresh_token, kept.bank_refresh_token);

  // The kept refresh token is the one the bank expects next.
  t.mock.restoreAll();
  await expireAtBank(h, bankConsentId);
  assert.equal((await execute(h, token, '7.00 NZD', 'third')).body.payment.status, 'successful');
});
