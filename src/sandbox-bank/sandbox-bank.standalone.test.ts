import net from 'node:net';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { freshDb } from '../../test/helpers.ts';
import { call, creditor, payerDecides, remittance } from '../../test/support/banks.ts';
import { buildSandboxBankApp, migrateSandboxBank } from './sandbox-bank.app.ts';

// The sandbox bank alone (npm run sandbox-bank): its own database with only its tables, and the
// client it was started with. freshDb gives SQLite, or PostgreSQL with TEST_ENGINE=postgres.

test('runs alone with its own tables and a configured client', async (t) => {
  const testDb = await freshDb();
  await migrateSandboxBank(testDb.db);
  const app = await buildSandboxBankApp({
    db: testDb.db,
    zone: 'Pacific/Auckland',
    clients: () => [
      { clientId: 'shop', clientSecret: 'shop-secret', redirectUris: ['https://shop.example/bank/return'] },
    ],
  });
  t.after(async () => {
    await app.close();
    await testDb.drop();
  });
  const url = (await app.listen({ port: 0, host: '127.0.0.1' })).replace('localhost', '127.0.0.1');

  assert.equal(
    (
      await call('POST', `${url}/token`, {
        form: { grant_type: 'client_credentials', client_id: 'tono', client_secret: 'tono-sandbox-secret' },
      })
    ).status,
    401,
  );
  const basic = Buffer.from('shop:shop-secret').toString('base64');
  const token = await call('POST', `${url}/token`, {
    form: { grant_type: 'client_credentials' },
    headers: { authorization: `Basic ${basic}` },
  });
  assert.equal(token.status, 200);

  const consent = await call('POST', `${url}/domestic-payment-consents`, {
    token: token.body.access_token,
    headers: { 'x-idempotency-key': 'one' },
    body: {
      Data: {
        Consent: {
          InstructionIdentification: 'V-ZZZ999',
          EndToEndIdentification: 'V-ZZZ999',
          InstructedAmount: { Amount: '3.00', Currency: 'NZD' },
          CreditorAccount: creditor,
          RemittanceInformation: remittance('V-ZZZ999'),
        },
      },
      Risk: {},
    },
  });
  assert.equal(consent.status, 201);
  assert.ok(consent.body.Links.Self.startsWith(`${url}/domestic-payment-consents/`));
  const authorise = `${url}/authorize?${new URLSearchParams({ consent_id: consent.body.Data.ConsentId, redirect_uri: 'https://shop.example/bank/return', state: 'q' })}`;
  const { location } = await payerDecides(authorise, 'approve');
  assert.equal(location.origin, 'https://shop.example');
  assert.equal(location.searchParams.get('state'), 'q');
});

test('stops while a browser holds a connection it has sent nothing on', async (t) => {
  const testDb = await freshDb();
  t.after(() => testDb.drop());
  await migrateSandboxBank(testDb.db);
  const app = await buildSandboxBankApp({ db: testDb.db, zone: 'Pacific/Auckland', clients: () => [] });
  const url = new URL(await app.listen({ port: 0, host: '127.0.0.1' }));
  const silent = net.connect(Number(url.port), '127.0.0.1');
  await new Promise((resolve) => silent.once('connect', resolve));
  t.after(() => silent.destroy());
  await new Promise((resolve) => setTimeout(resolve, 600));
  const closed = app.close().then(() => 'closed');
  assert.equal(
    await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 5000, 'still open'))]),
    'closed',
  );
});
