import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  call,
  clientToken,
  hook,
  creditor,
  listeningApp,
  payerDecides,
  remittance,
  type Listening,
} from '../../test/support/banks.ts';

// The sandbox bank driven over real HTTP with the standard's shapes, as a payment service would.
// Both engines: listeningApp is buildTestApp (SQLite, or PostgreSQL with TEST_ENGINE) on a real port.

type Bank = { app: Listening; url: string; token: string };

async function bank(t: import('node:test').TestContext): Promise<Bank> {
  const app = await listeningApp(t);
  return { app, url: app.bankUrl, token: await clientToken(app.bankUrl) };
}

let keyCounter = 0;
const key = () => `key-${Date.now()}-${++keyCounter}`;

const initiation = (amount = '12.50', particulars = 'V-ABC123') => ({
  InstructionIdentification: particulars,
  EndToEndIdentification: particulars,
  InstructedAmount: { Amount: amount, Currency: 'NZD' },
  CreditorAccount: creditor,
  RemittanceInformation: remittance(particulars),
});

async function domesticConsent(b: Bank, amount = '12.50') {
  const reply = await call('POST', `${b.url}/domestic-payment-consents`, {
    token: b.token,
    headers: { 'x-idempotency-key': key() },
    body: { Data: { Consent: initiation(amount) }, Risk: {} },
  });
  assert.equal(reply.status, 201, reply.text);
  return reply.body.Data.ConsentId as string;
}

async function authorise(b: Bank, consentId: string, username = 'sandbox'): Promise<string> {
  const url = `${b.url}/authorize?${new URLSearchParams({ consent_id: consentId, redirect_uri: b.app.redirectUri, state: 'st-1' })}`;
  const { location } = await payerDecides(url, 'approve', username);
  const exchanged = await call('POST', `${b.url}/token`, {
    form: {
      grant_type: 'authorization_code',
      code: location.searchParams.get('code')!,
      redirect_uri: b.app.redirectUri,
      client_id: 'tono',
      client_secret: 'tono-sandbox-secret',
    },
  });
  assert.equal(exchanged.status, 200, exchanged.text);
  return exchanged.body.access_token;
}

async function pay(
  b: Bank,
  consentToken: string,
  consentId: string,
  amount: string,
  options: { at?: string; idempotencyKey?: string; particulars?: string } = {},
) {
  return call('POST', `${b.url}/domestic-payments`, {
    token: consentToken,
    headers: {
      'x-idempotency-key': options.idempotencyKey ?? key(),
      ...(options.at && { 'x-sandbox-time': options.at }),
    },
    body: { Data: { ConsentId: consentId, Initiation: initiation(amount, options.particulars) }, Risk: {} },
  });
}

async function balance(b: Bank, username = 'sandbox'): Promise<string> {
  return (await hook('GET', `${b.url}/test/payers/${username}`)).body.Data.Balance.Amount;
}

test('one-off payment: consent, approval through the login page, code exchange, execution', async (t) => {
  const b = await bank(t);
  const created = await call('POST', `${b.url}/domestic-payment-consents`, {
    token: b.token,
    headers: { 'x-idempotency-key': 'consent-1', 'x-fapi-interaction-id': 'trace-1' },
    body: { Data: { Consent: initiation() }, Risk: {} },
  });
  assert.equal(created.status, 201);
  const consentId = created.body.Data.ConsentId;
  assert.equal(created.body.Data.Status, 'AwaitingAuthorisation');
  assert.deepEqual(created.body.Data.Consent, initiation());
  assert.equal(created.headers.get('x-fapi-interaction-id'), 'trace-1');
  assert.equal(created.body.Links.Self, `${b.url}/domestic-payment-consents/${consentId}`);
  assert.deepEqual(created.body.Meta, {});

  const authoriseUrl = `${b.url}/authorize?${new URLSearchParams({ consent_id: consentId, redirect_uri: b.app.redirectUri, state: 'xyz 1' })}`;
  const page = await call('GET', authoriseUrl);
  assert.equal(page.status, 200);
  assert.match(page.headers.get('content-security-policy')!, /default-src 'none'/);
  assert.match(page.text, /<label for="username">Username<\/label>/);
  assert.match(page.text, /<label for="password">Password<\/label>/);
  assert.doesNotMatch(page.text, /<script/);

  const { location, consentPage } = await payerDecides(authoriseUrl, 'approve');
  assert.match(consentPage, /\$12\.50 NZD/);
  assert.match(consentPage, /Acme Coffee/);
  assert.match(consentPage, /V-ABC123/);
  assert.equal(location.origin + location.pathname, b.app.redirectUri);
  assert.equal(location.searchParams.get('state'), 'xyz 1');
  const code = location.searchParams.get('code')!;
  assert.ok(code.length >= 20);
  assert.equal(
    (await call('GET', `${b.url}/domestic-payment-consents/${consentId}`, { token: b.token })).body.Data.Status,
    'Authorised',
  );

  const form = {
    grant_type: 'authorization_code',
    code,
    redirect_uri: b.app.redirectUri,
    client_id: 'tono',
    client_secret: 'tono-sandbox-secret',
  };
  const exchanged = await call('POST', `${b.url}/token`, { form });
  assert.equal(exchanged.status, 200);
  assert.equal(exchanged.body.token_type, 'Bearer');
  assert.equal(exchanged.body.consent_id, consentId);
  const again = await call('POST', `${b.url}/token`, { form });
  assert.deepEqual(again.body, { error: 'invalid_grant', error_description: 'The code has already been used' });

  const before = await balance(b);
  const paid = await pay(b, exchanged.body.access_token, consentId, '12.50');
  assert.equal(paid.status, 201, paid.text);
  assert.equal(paid.body.Data.Status, 'AcceptedSettlementCompleted');
  assert.equal(paid.body.Data.ConsentId, consentId);
  assert.deepEqual(paid.body.Data.Initiation.RemittanceInformation.Reference.CreditorReference, {
    Particulars: 'V-ABC123',
    Code: 'TONO',
    Reference: 'INV42',
  });
  const paymentId = paid.body.Data.DomesticPaymentId;
  assert.equal(Number(before) - Number(await balance(b)), 12.5);

  const fetched = await call('GET', `${b.url}/domestic-payments/${paymentId}`, { token: b.token });
  assert.equal(fetched.status, 200);
  assert.equal(fetched.body.Data.Status, 'AcceptedSettlementCompleted');
  assert.equal(fetched.body.Links.Self, `${b.url}/domestic-payments/${paymentId}`);
  assert.equal(
    (await call('GET', `${b.url}/domestic-payment-consents/${consentId}`, { token: b.token })).body.Data.Status,
    'Consumed',
  );

  const second = await pay(b, exchanged.body.access_token, consentId, '12.50');
  assert.equal(second.status, 400);
  assert.equal(second.body.Errors[0].ErrorCode, 'Resource.Consent.InvalidStatus');
});

test('the payer declines: redirect with error=access_denied and the consent is Rejected', async (t) => {
  const b = await bank(t);
  const consentId = await domesticConsent(b);
  const url = `${b.url}/authorize?${new URLSearchParams({ consent_id: consentId, redirect_uri: b.app.redirectUri, state: 's-9' })}`;
  const { location } = await payerDecides(url, 'decline');
  assert.equal(location.searchParams.get('error'), 'access_denied');
  assert.equal(location.searchParams.get('state'), 's-9');
  assert.equal(location.searchParams.get('code'), null);
  assert.equal(
    (await call('GET', `${b.url}/domestic-payment-consents/${consentId}`, { token: b.token })).body.Data.Status,
    'Rejected',
  );
});

test('login refuses a wrong username with a message; a foreign redirect URI is refused without redirecting', async (t) => {
  const b = await bank(t);
  const consentId = await domesticConsent(b);
  const refused = await call('POST', `${b.url}/authorize/login`, {
    form: {
      consent_id: consentId,
      redirect_uri: b.app.redirectUri,
      state: 's',
      username: 'mallory<b>',
      password: 'pw',
    },
  });
  assert.equal(refused.status, 401);
  assert.match(
    refused.text,
    /role="alert"[^>]*>Unknown username\. At Sandbox Bank, sign in as “sandbox” with any password\./,
  );
  assert.match(refused.text, /value="mallory&lt;b&gt;"/);

  const foreign = await call(
    'GET',
    `${b.url}/authorize?${new URLSearchParams({ consent_id: consentId, redirect_uri: 'https://evil.example/cb', state: 's' })}`,
  );
  assert.equal(foreign.status, 400);
  assert.equal(foreign.headers.get('location'), null);
  assert.match(foreign.text, /does not match the one registered/);

  const unknown = await call(
    'GET',
    `${b.url}/authorize?${new URLSearchParams({ consent_id: 'dpc-nope', redirect_uri: b.app.redirectUri, state: 's' })}`,
  );
  assert.equal(unknown.status, 400);
  assert.match(unknown.text, /does not exist/);
});

test('idempotency: one processing per key; the same key returns the same payment; another body is refused', async (t) => {
  const b = await bank(t);
  const consentId = await domesticConsent(b, '20.00');
  const token = await authorise(b, consentId);
  const before = Number(await balance(b));
  const first = await pay(b, token, consentId, '20.00', { idempotencyKey: 'pay-1' });
  const replay = await pay(b, token, consentId, '20.00', { idempotencyKey: 'pay-1' });
  assert.equal(first.status, 201);
  assert.equal(replay.status, 201);
  assert.equal(replay.body.Data.DomesticPaymentId, first.body.Data.DomesticPaymentId);
  assert.equal(before - Number(await balance(b)), 20);
  const other = await pay(b, token, consentId, '21.00', { idempotencyKey: 'pay-1' });
  assert.equal(other.status, 400);
  assert.deepEqual(other.body.Errors, [
    {
      ErrorCode: 'Field.Invalid',
      Message: 'x-idempotency-key was already used with a different request body',
      Path: 'x-idempotency-key',
    },
  ]);
});

test('errors have the standard shape: missing and invalid fields, unknown ids are 400, no token is 401', async (t) => {
  const b = await bank(t);
  const missing = await call('POST', `${b.url}/domestic-payment-consents`, {
    token: b.token,
    headers: { 'x-idempotency-key': key() },
    body: { Data: { Consent: { ...initiation(), InstructedAmount: undefined } }, Risk: {} },
  });
  assert.equal(missing.status, 400);
  assert.deepEqual(
    { Code: missing.body.Code, Message: missing.body.Message, Errors: missing.body.Errors },
    {
      Code: '400 BadRequest',
      Message: 'Data.Consent.InstructedAmount is required',
      Errors: [
        {
          ErrorCode: 'Field.Missing',
          Message: 'Data.Consent.InstructedAmount is required',
          Path: 'Data.Consent.InstructedAmount',
        },
      ],
    },
  );
  assert.equal(typeof missing.body.Id, 'string');

  const zero = await call('POST', `${b.url}/domestic-payment-consents`, {
    token: b.token,
    headers: { 'x-idempotency-key': key() },
    body: { Data: { Consent: initiation('0.00') }, Risk: {} },
  });
  assert.deepEqual(zero.body.Errors, [
    {
      ErrorCode: 'Field.Invalid',
      Message: 'Data.Consent.InstructedAmount.Amount must be a positive amount with two decimals, e.g. "12.50"',
      Path: 'Data.Consent.InstructedAmount.Amount',
    },
  ]);

  const noKey = await call('POST', `${b.url}/domestic-payment-consents`, {
    token: b.token,
    body: { Data: { Consent: initiation() }, Risk: {} },
  });
  assert.deepEqual(noKey.body.Errors, [
    { ErrorCode: 'Field.Missing', Message: 'x-idempotency-key is required', Path: 'x-idempotency-key' },
  ]);

  const unknownConsent = await call('GET', `${b.url}/domestic-payment-consents/dpc-unknown`, { token: b.token });
  assert.equal(unknownConsent.status, 400);
  assert.deepEqual(unknownConsent.body.Errors, [
    { ErrorCode: 'Field.Invalid', Message: 'No such resource: dpc-unknown', Path: 'ConsentId' },
  ]);
  const unknownPayment = await call('GET', `${b.url}/domestic-payments/dp-unknown`, { token: b.token });
  assert.equal(unknownPayment.status, 400);
  assert.deepEqual(unknownPayment.body.Errors, [
    { ErrorCode: 'Field.Invalid', Message: 'No such resource: dp-unknown', Path: 'DomesticPaymentId' },
  ]);

  const anonymous = await call('GET', `${b.url}/domestic-payment-consents/dpc-unknown`);
  assert.equal(anonymous.status, 401);
  assert.deepEqual(anonymous.body.Errors, [
    {
      ErrorCode: 'Header.Missing',
      Message: 'Send Authorization: Bearer <access token> from POST /token',
      Path: 'Authorization',
    },
  ]);

  const badSecret = await call('POST', `${b.url}/token`, {
    form: { grant_type: 'client_credentials', client_id: 'tono', client_secret: 'wrong' },
  });
  assert.deepEqual(
    [badSecret.status, badSecret.body],
    [401, { error: 'invalid_client', error_description: 'Unknown client or wrong client secret' }],
  );

  // A client token cannot execute; a consent token cannot pay a different amount.
  const consentId = await domesticConsent(b, '5.00');
  const withClientToken = await pay(b, b.token, consentId, '5.00');
  assert.equal(withClientToken.status, 403);
  assert.equal(withClientToken.body.Errors[0].ErrorCode, 'Resource.Consent.Mismatch');
  const token = await authorise(b, consentId);
  const mismatch = await pay(b, token, consentId, '6.00');
  assert.equal(mismatch.status, 400);
  assert.deepEqual(mismatch.body.Errors, [
    {
      ErrorCode: 'Resource.Consent.Mismatch',
      Message: 'The amount differs from the consent',
      Path: 'Data.Initiation.InstructedAmount.Amount',
    },
  ]);
});

// Enduring consents -------------------------------------------------------------------------

async function enduring(b: Bank, data: Record<string, unknown>): Promise<{ consentId: string; token: string }> {
  const created = await call('POST', `${b.url}/enduring-payment-consents`, {
    token: b.token,
    headers: { 'x-idempotency-key': key() },
    body: {
      Data: {
        Consent: {
          CreditorAccount: [creditor],
          MaximumAmount: (data.Frequency as { TotalAmount: unknown }).TotalAmount,
          ...data,
        },
      },
      Risk: {},
    },
  });
  assert.equal(created.status, 201, created.text);
  assert.equal(created.body.Data.Status, 'AwaitingAuthorisation');
  const consentId = created.body.Data.ConsentId;
  return { consentId, token: await authorise(b, consentId) };
}

const nzd = (Amount: string) => ({ Amount, Currency: 'NZD' });

async function expectRefused(reply: Awaited<ReturnType<typeof pay>>, code: string) {
  assert.equal(reply.status, 400, reply.text);
  assert.equal(reply.body.Errors[0].ErrorCode, code);
}

test('weekly limit in Pacific/Auckland across the end of daylight saving on 2027-04-04', async (t) => {
  const b = await bank(t);
  const { consentId, token } = await enduring(b, {
    FromDateTime: '2027-03-01T00:00:00+13:00',
    Frequency: { Period: 'Weekly', TotalAmount: nzd('100.00') },
  });
  // Week of Monday 29 March to Sunday 4 April 2027; clocks go back at 03:00 on the Sunday.
  assert.equal(
    (await pay(b, token, consentId, '60.00', { at: '2027-03-29T09:00:00+13:00' })).body.Data.Status,
    'AcceptedSettlementCompleted',
  );
  await expectRefused(
    await pay(b, token, consentId, '50.00', { at: '2027-04-04T23:30:00+12:00' }),
    'Resource.Consent.Exceed.Frequency',
  );
  assert.equal((await pay(b, token, consentId, '40.00', { at: '2027-04-04T23:30:00+12:00' })).status, 201);
  // 00:10 on Monday 5 April local (12:10 UTC on the 4th): a new week.
  assert.equal((await pay(b, token, consentId, '100.00', { at: '2027-04-05T00:10:00+12:00' })).status, 201);
});

test('daily limit and count on the 23-hour day when daylight saving starts, 2026-09-27', async (t) => {
  const b = await bank(t);
  const { consentId, token } = await enduring(b, {
    FromDateTime: '2026-09-01T00:00:00+12:00',
    Frequency: { Period: 'Daily', TotalAmount: nzd('30.00'), TotalCount: 2 },
  });
  assert.equal((await pay(b, token, consentId, '10.00', { at: '2026-09-27T00:30:00+12:00' })).status, 201);
  assert.equal((await pay(b, token, consentId, '10.00', { at: '2026-09-27T23:00:00+13:00' })).status, 201);
  await expectRefused(
    await pay(b, token, consentId, '5.00', { at: '2026-09-27T23:59:00+13:00' }),
    'Resource.Consent.Exceed.Frequency',
  );
  assert.equal((await pay(b, token, consentId, '30.00', { at: '2026-09-28T00:05:00+13:00' })).status, 201);
  await expectRefused(
    await pay(b, token, consentId, '0.01', { at: '2026-09-28T08:00:00+13:00' }),
    'Resource.Consent.Exceed.Frequency',
  );
});

test('per-payment maximum, lifetime count and amount, and the consent dates', async (t) => {
  const b = await bank(t);
  const { consentId, token } = await enduring(b, {
    FromDateTime: '2027-01-01T00:00:00+13:00',
    ToDateTime: '2027-12-31T23:59:59+13:00',
    MaximumAmount: nzd('50.00'),
    Frequency: { Period: 'Monthly', TotalAmount: nzd('500.00') },
    TotalCount: 3,
    TotalAmount: nzd('100.00'),
  });
  await expectRefused(
    await pay(b, token, consentId, '10.00', { at: '2026-12-31T23:00:00+13:00' }),
    'Resource.Consent.Exceed.Dates',
  );
  await expectRefused(
    await pay(b, token, consentId, '50.01', { at: '2027-02-01T10:00:00+13:00' }),
    'Resource.Consent.Exceed.MaximumAmount',
  );
  assert.equal((await pay(b, token, consentId, '50.00', { at: '2027-02-01T10:00:00+13:00' })).status, 201);
  assert.equal((await pay(b, token, consentId, '40.00', { at: '2027-03-01T10:00:00+13:00' })).status, 201);
  await expectRefused(
    await pay(b, token, consentId, '10.01', { at: '2027-04-01T10:00:00+13:00' }),
    'Resource.Consent.Exceed.TotalAmount',
  );
  assert.equal((await pay(b, token, consentId, '10.00', { at: '2027-04-01T10:00:00+13:00' })).status, 201);
  await expectRefused(
    await pay(b, token, consentId, '0.01', { at: '2027-05-01T10:00:00+12:00' }),
    'Resource.Consent.Exceed.TotalCount',
  );
  const status = await call('GET', `${b.url}/enduring-payment-consents/${consentId}`, {
    token: b.token,
    headers: { 'x-sandbox-time': '2028-01-02T00:00:00Z' },
  });
  // The standard has no Expired: the consent stays Authorised, and its dates refuse payments.
  assert.equal(status.body.Data.Status, 'Authorised');
  assert.deepEqual(status.body.Data.Consent.Frequency, { Period: 'Monthly', TotalAmount: nzd('500.00') });
  await expectRefused(
    await pay(b, token, consentId, '0.01', { at: '2028-01-02T00:00:00Z' }),
    'Resource.Consent.Exceed.Dates',
  );
});

test("the approval page shows an enduring consent's limits, payee and reference", async (t) => {
  const b = await bank(t);
  const created = await call('POST', `${b.url}/enduring-payment-consents`, {
    token: b.token,
    headers: { 'x-idempotency-key': key() },
    body: {
      Data: {
        Consent: {
          FromDateTime: '2026-12-01T10:00:00+13:00',
          ToDateTime: '2027-06-30T23:59:59+12:00',
          MaximumAmount: nzd('25.00'),
          Frequency: { Period: 'Weekly', TotalAmount: nzd('1250.00'), TotalCount: 3 },
          TotalCount: 20,
          CreditorAccount: [creditor],
        },
      },
      Risk: {},
    },
  });
  const url = `${b.url}/authorize?${new URLSearchParams({ consent_id: created.body.Data.ConsentId, redirect_uri: b.app.redirectUri, state: 's', client_id: 'tono' })}`;
  const otherClient = await call('GET', url.replace('client_id=tono', 'client_id=someone'));
  assert.equal(otherClient.status, 400);
  assert.match(otherClient.text, /This consent was made by another payment service\./);
  const { consentPage } = await payerDecides(url, 'approve');
  for (const expected of [
    '<dt>Each payment</dt><dd>up to $25.00</dd>',
    '<dt>Each week (Monday to Sunday)</dt><dd>up to $1,250.00</dd>',
    '<dt>Payments per period</dt><dd>at most 3</dd>',
    '<dt>Number of payments</dt><dd>at most 20</dd>',
    '<dt>Starting</dt><dd>1 December 2026, 10:00 AM</dd>',
    '<dt>Ending</dt><dd>30 June 2027, 11:59 PM</dd>',
    '<dt>Pay to</dt><dd>Acme Coffee</dd>',
  ])
    assert.ok(consentPage.includes(expected), expected);
  assert.ok(!consentPage.includes('<dt>Particulars</dt>'));
});

test('revocation by the service (DELETE) and by the payer at the bank', async (t) => {
  const b = await bank(t);
  const limits = { FromDateTime: '2026-01-01T00:00:00Z', Frequency: { Period: 'Monthly', TotalAmount: nzd('100.00') } };
  const first = await enduring(b, limits);
  const deleted = await call('DELETE', `${b.url}/enduring-payment-consents/${first.consentId}`, { token: b.token });
  assert.equal(deleted.status, 204);
  assert.equal(
    (await call('GET', `${b.url}/enduring-payment-consents/${first.consentId}`, { token: b.token })).body.Data.Status,
    'Revoked',
  );
  const refused = await pay(b, first.token, first.consentId, '1.00');
  await expectRefused(refused, 'Resource.Consent.InvalidStatus');
  assert.equal(refused.body.Errors[0].Message, 'Consent status is Revoked; payments need an Authorised consent');

  const second = await enduring(b, limits);
  const revoked = await hook('POST', `${b.url}/test/consents/${second.consentId}/revoke`);
  assert.deepEqual(revoked.body, { Data: { ConsentId: second.consentId, Status: 'Revoked' } });
  await expectRefused(await pay(b, second.token, second.consentId, '1.00'), 'Resource.Consent.InvalidStatus');
  const unknown = await call('DELETE', `${b.url}/enduring-payment-consents/epc-unknown`, { token: b.token });
  assert.equal(unknown.status, 400);
});

test('decline-next makes the bank reject executions with a reason; rejected payments do not use the limits', async (t) => {
  const b = await bank(t);
  const { consentId, token } = await enduring(b, {
    FromDateTime: '2026-01-01T00:00:00Z',
    Frequency: { Period: 'Annual', TotalAmount: nzd('10.00') },
  });
  const declined = await hook('POST', `${b.url}/test/consents/${consentId}/decline-next`, {
    count: 2,
    reason: 'fraud_check',
  });
  assert.equal(declined.status, 200);
  const before = await balance(b);
  for (let i = 0; i < 2; i++) {
    const rejected = await pay(b, token, consentId, '10.00');
    assert.equal(rejected.status, 201);
    assert.equal(rejected.body.Data.Status, 'Rejected');
    assert.equal(rejected.body.Data.StatusReason, undefined);
    assert.equal(rejected.headers.get('x-sandbox-status-reason'), 'FraudCheck');
  }
  assert.equal(await balance(b), before);
  assert.equal((await pay(b, token, consentId, '10.00')).body.Data.Status, 'AcceptedSettlementCompleted');
});

test('insufficient funds: a payer made by a test hook with a small balance', async (t) => {
  const b = await bank(t);
  const made = await hook('POST', `${b.url}/test/payers`, { username: 'skint', balance: '5.00' });
  assert.equal(made.status, 201);
  assert.deepEqual(made.body.Data.Balance, nzd('5.00'));
  const duplicate = await hook('POST', `${b.url}/test/payers`, { username: 'skint', balance: '5.00' });
  assert.equal(duplicate.status, 400);
  const { consentId, token } = await enduringAs(b, 'skint');
  const rejected = await pay(b, token, consentId, '10.00');
  assert.equal(rejected.body.Data.Status, 'Rejected');
  assert.equal(rejected.headers.get('x-sandbox-status-reason'), 'InsufficientFunds');
  assert.equal((await pay(b, token, consentId, '5.00')).body.Data.Status, 'AcceptedSettlementCompleted');
  assert.equal(await balance(b, 'skint'), '0.00');
  const unknown = await hook('GET', `${b.url}/test/payers/nobody`);
  assert.equal(unknown.status, 400);
});

async function enduringAs(b: Bank, username: string) {
  const created = await call('POST', `${b.url}/enduring-payment-consents`, {
    token: b.token,
    headers: { 'x-idempotency-key': key() },
    body: {
      Data: {
        Consent: {
          FromDateTime: '2026-01-01T00:00:00Z',
          MaximumAmount: nzd('100.00'),
          Frequency: { Period: 'Monthly', TotalAmount: nzd('100.00') },
          CreditorAccount: [creditor],
        },
      },
      Risk: {},
    },
  });
  const consentId = created.body.Data.ConsentId;
  return { consentId, token: await authorise(b, consentId, username) };
}

test('delayed confirmation: held until released, or for a number of seconds of bank time', async (t) => {
  const b = await bank(t);
  const { consentId, token } = await enduring(b, {
    FromDateTime: '2026-01-01T00:00:00Z',
    Frequency: { Period: 'Monthly', TotalAmount: nzd('100.00') },
  });
  await hook('POST', `${b.url}/test/consents/${consentId}/delay`, { status: 'Pending' });
  const held = await pay(b, token, consentId, '1.00');
  assert.equal(held.body.Data.Status, 'Pending');
  const id = held.body.Data.DomesticPaymentId;
  assert.equal((await call('GET', `${b.url}/domestic-payments/${id}`, { token: b.token })).body.Data.Status, 'Pending');
  const released = await hook('POST', `${b.url}/test/payments/${id}/release`, {});
  assert.equal(released.body.Data.Status, 'AcceptedSettlementCompleted');
  assert.equal(
    (await call('GET', `${b.url}/domestic-payments/${id}`, { token: b.token })).body.Data.Status,
    'AcceptedSettlementCompleted',
  );

  await hook('POST', `${b.url}/test/consents/${consentId}/delay`, { seconds: 60 });
  const timed = await pay(b, token, consentId, '2.00', { at: '2026-11-21T10:00:00Z' });
  assert.equal(timed.body.Data.Status, 'AcceptedSettlementInProcess');
  const url = `${b.url}/domestic-payments/${timed.body.Data.DomesticPaymentId}`;
  assert.equal(
    (await call('GET', url, { token: b.token, headers: { 'x-sandbox-time': '2026-11-21T10:00:59Z' } })).body.Data
      .Status,
    'AcceptedSettlementInProcess',
  );
  assert.equal(
    (await call('GET', url, { token: b.token, headers: { 'x-sandbox-time': '2026-11-21T10:01:00Z' } })).body.Data
      .Status,
    'AcceptedSettlementCompleted',
  );

  const rejectedLater = await pay(b, token, consentId, '3.00');
  const before = await balance(b);
  const refunded = await hook('POST', `${b.url}/test/payments/${rejectedLater.body.Data.DomesticPaymentId}/release`, {
    outcome: 'rejected',
    reason: 'insufficient_funds',
  });
  assert.equal(refunded.body.Data.Status, 'Rejected');
  assert.equal((Number(await balance(b)) - Number(before)).toFixed(2), '3.00');

  await hook('POST', `${b.url}/test/consents/${consentId}/delay`, { off: true });
  assert.equal((await pay(b, token, consentId, '1.00')).body.Data.Status, 'AcceptedSettlementCompleted');
});

test('unknown routes under the bank answer in the bank error shape', async (t) => {
  const b = await bank(t);
  const reply = await call('GET', `${b.url}/nope`);
  assert.equal(reply.status, 404);
  assert.equal(reply.body.Errors[0].ErrorCode, 'Resource.Invalid');
});

test('the mounted bank stays out of the service OpenAPI document', async (t) => {
  const b = await bank(t);
  const doc = await call('GET', `${b.app.baseUrl}/v1/openapi.json`);
  assert.equal(doc.status, 200);
  assert.deepEqual(
    Object.keys(doc.body.paths).filter((path) => path.startsWith('/sandbox-bank')),
    [],
  );
});

test('concurrent executions: the limit holds, and one key makes one payment', async (t) => {
  const b = await bank(t);
  const { consentId, token } = await enduring(b, {
    FromDateTime: '2026-01-01T00:00:00Z',
    Frequency: { Period: 'Monthly', TotalAmount: nzd('10.00') },
  });
  const at = '2026-11-21T10:00:00Z';
  const replies = await Promise.all(Array.from({ length: 5 }, () => pay(b, token, consentId, '5.00', { at })));
  assert.deepEqual(replies.map((r) => r.status).sort(), [201, 201, 400, 400, 400]);
  for (const refused of replies.filter((r) => r.status === 400))
    assert.equal(refused.body.Errors[0].ErrorCode, 'Resource.Consent.Exceed.Frequency');

  const other = await enduring(b, {
    FromDateTime: '2026-01-01T00:00:00Z',
    Frequency: { Period: 'Monthly', TotalAmount: nzd('100.00') },
  });
  const before = Number(await balance(b));
  const same = await Promise.all(
    Array.from({ length: 4 }, () => pay(b, other.token, other.consentId, '7.00', { at, idempotencyKey: 'same-key' })),
  );
  assert.equal(new Set(same.map((r) => r.body.Data.DomesticPaymentId)).size, 1);
  assert.equal((before - Number(await balance(b))).toFixed(2), '7.00');
});

test('usage is kept per consent: a rejected held payment frees its amount, a new period starts empty, an earlier period still counts', async (t) => {
  const b = await bank(t);
  const { consentId, token } = await enduring(b, {
    FromDateTime: '2026-01-01T00:00:00Z',
    Frequency: { Period: 'Monthly', TotalAmount: nzd('10.00') },
    TotalAmount: nzd('25.00'),
  });
  const june = '2027-06-15T00:00:00+12:00';
  assert.equal((await pay(b, token, consentId, '6.00', { at: june })).status, 201);
  await hook('POST', `${b.url}/test/consents/${consentId}/delay`, { status: 'Pending' });
  const held = await pay(b, token, consentId, '4.00', { at: june });
  assert.equal(held.body.Data.Status, 'Pending');
  await hook('POST', `${b.url}/test/consents/${consentId}/delay`, { off: true });
  await expectRefused(await pay(b, token, consentId, '0.01', { at: june }), 'Resource.Consent.Exceed.Frequency');
  await hook('POST', `${b.url}/test/payments/${held.body.Data.DomesticPaymentId}/release`, { outcome: 'rejected' });
  assert.equal(
    (await pay(b, token, consentId, '4.00', { at: june })).status,
    201,
    'the rejected 4.00 no longer counts',
  );
  await expectRefused(await pay(b, token, consentId, '0.01', { at: june }), 'Resource.Consent.Exceed.Frequency');

  // July starts empty; June, asked about again, still holds its 10.00.
  assert.equal((await pay(b, token, consentId, '10.00', { at: '2027-07-01T00:00:00+12:00' })).status, 201);
  await expectRefused(
    await pay(b, token, consentId, '0.01', { at: '2027-06-30T23:59:00+12:00' }),
    'Resource.Consent.Exceed.Frequency',
  );
  // 6 + 4 + 10 = 20 of the 25.00 in total: 5.00 more fits in August, 5.01 does not.
  await expectRefused(
    await pay(b, token, consentId, '5.01', { at: '2027-08-02T00:00:00+12:00' }),
    'Resource.Consent.Exceed.TotalAmount',
  );
  assert.equal((await pay(b, token, consentId, '5.00', { at: '2027-08-02T00:00:00+12:00' })).status, 201);
});

test('consents outside the standard are refused: the pre-v3.0.2 envelope, a quarterly period, a missing MaximumAmount, a long CreditorName', async (t) => {
  const b = await bank(t);
  const post = (resource: string, body: unknown) =>
    call('POST', `${b.url}/${resource}`, { token: b.token, headers: { 'x-idempotency-key': key() }, body });
  const oldEnvelope = await post('domestic-payment-consents', { Data: { Initiation: initiation() }, Risk: {} });
  assert.equal(oldEnvelope.status, 400, oldEnvelope.text);
  assert.match(oldEnvelope.body.Errors[0].ErrorCode, /^Field\.(Missing|Unexpected)$/);
  const longName = await post('domestic-payment-consents', {
    Data: {
      Consent: {
        ...initiation(),
        RemittanceInformation: { Reference: { CreditorName: 'A Name Longer Than Twenty', CreditorReference: {} } },
      },
    },
    Risk: {},
  });
  assert.equal(longName.status, 400, longName.text);
  assert.equal(longName.body.Errors[0].Path, 'Data.Consent.RemittanceInformation.Reference.CreditorName');
  const base = {
    FromDateTime: '2026-01-01T00:00:00Z',
    MaximumAmount: nzd('10.00'),
    Frequency: { Period: 'Monthly', TotalAmount: nzd('10.00') },
    CreditorAccount: [creditor],
  };
  assert.equal((await post('enduring-payment-consents', { Data: { Consent: base }, Risk: {} })).status, 201);
  const quarter = await post('enduring-payment-consents', {
    Data: { Consent: { ...base, Frequency: { Period: 'Quarter', TotalAmount: nzd('10.00') } } },
    Risk: {},
  });
  assert.equal(quarter.status, 400);
  const { MaximumAmount: _, ...noMaximum } = base;
  const missing = await post('enduring-payment-consents', { Data: { Consent: noMaximum }, Risk: {} });
  assert.deepEqual(
    [missing.status, missing.body.Errors[0].ErrorCode, missing.body.Errors[0].Path],
    [400, 'Field.Missing', 'Data.Consent.MaximumAmount'],
  );
  const flat = await post('enduring-payment-consents', { Data: { ...base, Consent: base }, Risk: {} });
  assert.deepEqual([flat.status, flat.body.Errors[0].ErrorCode], [400, 'Field.Unexpected']);
});

test('debtor account: released for a payment whose consent asked for it, refused otherwise', async (t) => {
  const b = await bank(t);
  const make = async (release: boolean) => {
    const created = await call('POST', `${b.url}/domestic-payment-consents`, {
      token: b.token,
      headers: { 'x-idempotency-key': key() },
      body: { Data: { Consent: { ...initiation('2.00'), ...(release && { DebtorAccountRelease: true }) } }, Risk: {} },
    });
    const consentId = created.body.Data.ConsentId;
    const paid = await pay(b, await authorise(b, consentId), consentId, '2.00');
    assert.equal(paid.status, 201, paid.text);
    return call('GET', `${b.url}/domestic-payments/${paid.body.Data.DomesticPaymentId}/debtor-account`, {
      token: b.token,
    });
  };
  const released = await make(true);
  assert.equal(released.status, 200, released.text);
  const payer = (await hook('GET', `${b.url}/test/payers/sandbox`)).body.Data;
  assert.deepEqual(released.body.Data, {
    DebtorAccount: { SchemeName: 'BECSElectronicCredit', Identification: payer.AccountNumber, Name: payer.Name },
  });
  const withheld = await make(false);
  assert.deepEqual([withheld.status, withheld.body.Errors[0].ErrorCode], [403, 'Resource.Consent.DebtorAccount']);
  const unknown = await call('GET', `${b.url}/domestic-payments/dp-nope/debtor-account`, { token: b.token });
  assert.equal(unknown.status, 400);
});
