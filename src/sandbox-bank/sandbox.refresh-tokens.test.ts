import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import {
  call,
  clientToken,
  creditor,
  hook,
  listeningApp,
  payerDecides,
  remittance,
  type Listening,
} from '../../test/support/banks.ts';

// The sandbox bank's refresh tokens (RFC 6749 section 6), over real HTTP: an enduring consent's
// access token comes with a refresh token, used once (rotation); access tokens expire as the
// token-lifetime hook says (never, by default) or when the expire-tokens hook says so. Both
// engines: listeningApp is buildTestApp on a real port (TEST_ENGINE=postgres for PostgreSQL).

type Bank = { app: Listening; url: string; clientToken: string };

async function bank(t: TestContext): Promise<Bank> {
  const app = await listeningApp(t);
  return { app, url: app.bankUrl, clientToken: await clientToken(app.bankUrl) };
}

let keyCounter = 0;
const key = () => `key-${Date.now()}-${++keyCounter}`;
const nzd = (Amount: string) => ({ Amount, Currency: 'NZD' });
const client = { client_id: 'tono', client_secret: 'tono-sandbox-secret' };

/** An enduring consent, approved by the payer; answers the token endpoint's whole answer for its code. */
async function enduring(b: Bank) {
  const created = await call('POST', `${b.url}/enduring-payment-consents`, {
    token: b.clientToken,
    headers: { 'x-idempotency-key': key() },
    body: {
      Data: {
        Consent: {
          FromDateTime: new Date(Date.now() - 60_000).toISOString(),
          DebtorAccountRelease: true,
          MaximumAmount: nzd('50.00'),
          Frequency: { Period: 'Weekly', TotalAmount: nzd('500.00') },
          CreditorAccount: [creditor],
        },
      },
      Risk: {},
    },
  });
  assert.equal(created.status, 201, created.text);
  const consentId = created.body.Data.ConsentId as string;
  const url = `${b.url}/authorize?${new URLSearchParams({ consent_id: consentId, redirect_uri: b.app.redirectUri, state: 's' })}`;
  const { location } = await payerDecides(url, 'approve');
  const exchanged = await call('POST', `${b.url}/token`, {
    form: {
      grant_type: 'authorization_code',
      code: location.searchParams.get('code')!,
      redirect_uri: b.app.redirectUri,
      ...client,
    },
  });
  assert.equal(exchanged.status, 200, exchanged.text);
  return { consentId, answer: exchanged.body as Record<string, unknown> };
}

function pay(b: Bank, token: string, consentId: string, idempotencyKey = key()) {
  return call('POST', `${b.url}/domestic-payments`, {
    token,
    headers: { 'x-idempotency-key': idempotencyKey },
    body: {
      Data: {
        ConsentId: consentId,
        Initiation: {
          InstructionIdentification: 'V-RFR001',
          EndToEndIdentification: 'V-RFR001',
          InstructedAmount: nzd('1.00'),
          CreditorAccount: creditor,
          RemittanceInformation: remittance('V-RFR001'),
        },
      },
      Risk: {},
    },
  });
}

function refresh(b: Bank, refreshToken: string, extra: Record<string, string> = {}) {
  return call('POST', `${b.url}/token`, {
    form: { grant_type: 'refresh_token', refresh_token: refreshToken, ...client, ...extra },
  });
}

test('an enduring consent’s token comes with a refresh token and, by default, no expiry; a refresh rotates it', async (t) => {
  const b = await bank(t);
  const { consentId, answer } = await enduring(b);
  assert.equal(typeof answer.refresh_token, 'string');
  assert.equal(answer.expires_in, undefined, 'by default the access token never expires');
  assert.equal(answer.consent_id, consentId);
  assert.equal((await pay(b, answer.access_token as string, consentId)).status, 201);
  assert.equal(
    (await pay(b, answer.refresh_token as string, consentId)).status,
    401,
    'a refresh token is not an access token',
  );

  const renewed = await refresh(b, answer.refresh_token as string);
  assert.equal(renewed.status, 200, renewed.text);
  assert.equal(renewed.headers.get('cache-control'), 'no-store');
  assert.equal(renewed.body.token_type, 'Bearer');
  assert.equal(renewed.body.scope, 'payments');
  assert.equal(renewed.body.consent_id, consentId);
  assert.notEqual(renewed.body.access_token, answer.access_token);
  assert.notEqual(renewed.body.refresh_token, answer.refresh_token, 'rotated');
  assert.equal((await pay(b, renewed.body.access_token, consentId)).status, 201);

  const reused = await refresh(b, answer.refresh_token as string);
  assert.equal(reused.status, 400);
  assert.deepEqual(reused.body, {
    error: 'invalid_grant',
    error_description: 'The refresh token has already been used: it was rotated',
  });
  assert.equal((await refresh(b, renewed.body.refresh_token, { scope: 'payments' })).status, 200);
});

test('the token endpoint refuses what RFC 6749 says it must: no token, an unknown one, a wider scope, another grant', async (t) => {
  const b = await bank(t);
  const { answer } = await enduring(b);
  const missing = await call('POST', `${b.url}/token`, { form: { grant_type: 'refresh_token', ...client } });
  assert.deepEqual([missing.status, missing.body.error], [400, 'invalid_request']);
  const unknown = await refresh(b, 'not-a-refresh-token-of-this-bank');
  assert.deepEqual([unknown.status, unknown.body.error], [400, 'invalid_grant']);
  const wider = await refresh(b, answer.refresh_token as string, { scope: 'payments accounts' });
  assert.deepEqual([wider.status, wider.body.error], [400, 'invalid_scope']);
  const wrongClient = await call('POST', `${b.url}/token`, {
    form: {
      grant_type: 'refresh_token',
      refresh_token: answer.refresh_token as string,
      client_id: 'tono',
      client_secret: 'x',
    },
  });
  assert.deepEqual([wrongClient.status, wrongClient.body.error], [401, 'invalid_client']);
  const other = await call('POST', `${b.url}/token`, { form: { grant_type: 'password', ...client } });
  assert.deepEqual(other.body, {
    error: 'unsupported_grant_type',
    error_description: 'grant_type must be client_credentials, authorization_code or refresh_token',
  });
  assert.equal((await refresh(b, answer.refresh_token as string)).status, 200, 'refusals spent nothing');
});

test('token-lifetime makes enduring access tokens expire; expire-tokens ends them now; a revoked consent is not renewed', async (t) => {
  const b = await bank(t);
  const lifetime = await hook('POST', `${b.url}/test/token-lifetime`, { enduring_seconds: 600 });
  assert.equal(lifetime.status, 200, lifetime.text);
  const { consentId, answer } = await enduring(b);
  assert.equal(answer.expires_in, 600);

  const expire = `${b.url}/test/consents/${consentId}/expire-tokens`;
  const expired = await hook('POST', expire, {});
  assert.equal(expired.status, 200, expired.text);
  assert.deepEqual(expired.body.Data, { ConsentId: consentId, ExpiredAccessTokens: 1, RevokedRefreshTokens: 0 });
  const refused = await pay(b, answer.access_token as string, consentId);
  assert.equal(refused.status, 401);
  assert.equal(refused.body.Errors[0].ErrorCode, 'Header.Invalid');
  const renewed = await refresh(b, answer.refresh_token as string);
  assert.equal(renewed.status, 200, renewed.text);
  assert.equal(renewed.body.expires_in, 600);
  assert.equal((await pay(b, renewed.body.access_token, consentId)).status, 201);

  // The bank stops renewing the consent's access while it is still Authorised.
  await hook('POST', expire, { refresh_tokens: true });
  const stopped = await refresh(b, renewed.body.refresh_token);
  assert.deepEqual(stopped.body, { error: 'invalid_grant', error_description: 'The refresh token has been revoked' });

  // A revoked consent's refresh token is refused.
  await hook('POST', `${b.url}/test/token-lifetime`, { enduring_seconds: null });
  const second = await enduring(b);
  assert.equal(second.answer.expires_in, undefined, 'back to tokens that never expire');
  assert.equal((await hook('POST', `${b.url}/test/consents/${second.consentId}/revoke`)).status, 200);
  const gone = await refresh(b, second.answer.refresh_token as string);
  assert.deepEqual(gone.body, {
    error: 'invalid_grant',
    error_description: "The consent's status is Revoked: its access is no longer renewed",
  });
});

test('a one-off payment’s consent gets no refresh token', async (t) => {
  const b = await bank(t);
  const created = await call('POST', `${b.url}/domestic-payment-consents`, {
    token: b.clientToken,
    headers: { 'x-idempotency-key': key() },
    body: {
      Data: {
        Consent: {
          InstructionIdentification: 'V-1',
          EndToEndIdentification: 'V-1',
          InstructedAmount: nzd('2.00'),
          CreditorAccount: creditor,
          RemittanceInformation: remittance('V-1'),
        },
      },
      Risk: {},
    },
  });
  const consentId = created.body.Data.ConsentId as string;
  const url = `${b.url}/authorize?${new URLSearchParams({ consent_id: consentId, redirect_uri: b.app.redirectUri, state: 's' })}`;
  const { location } = await payerDecides(url, 'approve');
  const exchanged = await call('POST', `${b.url}/token`, {
    form: {
      grant_type: 'authorization_code',
      code: location.searchParams.get('code')!,
      redirect_uri: b.app.redirectUri,
      ...client,
    },
  });
  assert.equal(exchanged.status, 200);
  assert.equal(exchanged.body.refresh_token, undefined);
  assert.equal(exchanged.body.expires_in, 86_400);
});
