import { test } from 'node:test';
import assert from 'node:assert/strict';
import { freshDb } from '../../test/helpers.ts';
import { call, creditor, remittance } from '../../test/support/banks.ts';
import { buildSandboxBankApp, migrateSandboxBank } from './sandbox-bank.app.ts';
import { Latency } from './hooks.service.ts';

// The sandbox bank's test hooks: only with client credentials, and only on the caller's own objects.

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

async function twoClientBank(t: import('node:test').TestContext) {
  const testDb = await freshDb();
  await migrateSandboxBank(testDb.db);
  const app = await buildSandboxBankApp({
    db: testDb.db,
    zone: 'Pacific/Auckland',
    clients: () => [
      { clientId: 'shop', clientSecret: 'shop-secret', redirectUris: ['https://shop.example/return'] },
      { clientId: 'other', clientSecret: 'other-secret', redirectUris: ['https://other.example/return'] },
    ],
  });
  t.after(async () => {
    await app.close();
    await testDb.drop();
  });
  const url = (await app.listen({ port: 0, host: '127.0.0.1' })).replace('localhost', '127.0.0.1');
  const token = (
    await call('POST', `${url}/token`, {
      form: { grant_type: 'client_credentials' },
      headers: { authorization: basic('shop', 'shop-secret') },
    })
  ).body.access_token;
  const consent = await call('POST', `${url}/domestic-payment-consents`, {
    token,
    headers: { 'x-idempotency-key': 'c1' },
    body: {
      Data: {
        Consent: {
          InstructionIdentification: 'V-1',
          EndToEndIdentification: 'V-1',
          InstructedAmount: { Amount: '3.00', Currency: 'NZD' },
          CreditorAccount: creditor,
          RemittanceInformation: remittance('V-1'),
        },
      },
      Risk: {},
    },
  });
  assert.equal(consent.status, 201, consent.text);
  return { url, consentId: consent.body.Data.ConsentId as string, db: testDb.db };
}

test("test hooks refuse callers without the client credentials, and another client's consent is unknown", async (t) => {
  const { url, consentId } = await twoClientBank(t);
  const path = `${url}/test/consents/${consentId}/decline-next`;
  for (const authorization of [undefined, basic('shop', 'wrong'), basic('nobody', 'x'), 'Bearer abc', 'Basic JTp4']) {
    const refused = await call('POST', path, { body: { count: 5 }, headers: authorization ? { authorization } : {} });
    assert.equal(refused.status, 401, `${authorization}: ${refused.text}`);
    assert.equal(refused.body.Errors[0].ErrorCode, authorization ? 'Header.Invalid' : 'Header.Missing');
  }
  for (const [hookPath, body] of [
    [`/test/consents/${consentId}/decline-next`, { count: 5 }],
    [`/test/consents/${consentId}/delay`, { seconds: 60 }],
    [`/test/consents/${consentId}/revoke`, {}],
    ['/test/latency', { consent_id: consentId, ms: 60_000, count: 100 }],
    ['/test/authorise', { consent_id: consentId, redirect_uri: 'https://other.example/return', state: 's' }],
  ] as const) {
    const foreign = await call('POST', `${url}${hookPath}`, {
      body,
      headers: { authorization: basic('other', 'other-secret') },
    });
    assert.equal(foreign.status, 400, `${hookPath}: ${foreign.text}`);
    assert.equal(foreign.body.Errors[0].ErrorCode, 'Field.Invalid', hookPath);
  }
  const own = await call('POST', path, {
    body: { count: 1 },
    headers: { authorization: basic('shop', 'shop-secret') },
  });
  assert.equal(own.status, 200, own.text);
  // the consent is untouched by the other client's attempts
  const token = (
    await call('POST', `${url}/token`, {
      form: { grant_type: 'client_credentials' },
      headers: { authorization: basic('shop', 'shop-secret') },
    })
  ).body.access_token;
  const read = await call('GET', `${url}/domestic-payment-consents/${consentId}`, { token });
  assert.equal(read.body.Data.Status, 'AwaitingAuthorisation');
});

test('the token endpoint answers invalid_client for Basic credentials that are not validly encoded', async (t) => {
  const { url } = await twoClientBank(t);
  const reply = await call('POST', `${url}/token`, {
    form: { grant_type: 'client_credentials' },
    headers: { authorization: 'Basic JTp4' },
  });
  assert.equal(reply.status, 401, reply.text);
  assert.equal(reply.body.error, 'invalid_client');
});

test('latency applies to the one consent it names', () => {
  const latency = new Latency();
  latency.set('consent-a', 500, 2);
  assert.equal(latency.take('consent-b'), 0);
  assert.equal(latency.take(null), 0);
  assert.equal(latency.take('consent-a'), 500);
  assert.equal(latency.take('consent-a'), 500);
  assert.equal(latency.take('consent-a'), 0);
});
