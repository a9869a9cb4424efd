import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { Migrator, sql, type Kysely } from 'kysely';
import { engineOf } from '../store/db.ts';
import { freshDb } from '../../test/helpers.ts';
import { call, creditor, remittance } from '../../test/support/banks.ts';
import { buildSandboxBankApp, migrateSandboxBank } from './sandbox-bank.app.ts';
import { sandboxBankMigrations } from './migrations/index.ts';
import { canonicalAccountNumber } from './sandbox.accounts.ts';

// Account holders at the sandbox bank: a payment moves money from the payer who approved it to the
// holder of its creditor account when the bank holds that account (as a refund is paid from a
// merchant's account to a payer's), and POST /test/payers makes holders with numbers of their own.

const client = { clientId: 'shop', clientSecret: 'shop-secret', redirectUris: ['https://shop.example/return'] };
const basic = `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}`;
const nzd = (Amount: string) => ({ Amount, Currency: 'NZD' });
let keyCounter = 0;
const key = () => `key-${++keyCounter}`;

type Bank = { url: string; token: string };
type Account = { SchemeName: 'BECSElectronicCredit'; Identification: string; Name: string };

async function bank(t: TestContext): Promise<Bank> {
  const testDb = await freshDb();
  await migrateSandboxBank(testDb.db);
  const app = await buildSandboxBankApp({ db: testDb.db, zone: 'Pacific/Auckland', clients: () => [client] });
  t.after(async () => {
    await app.close();
    await testDb.drop();
  });
  const url = (await app.listen({ port: 0, host: '127.0.0.1' })).replace('localhost', '127.0.0.1');
  const token = await call('POST', `${url}/token`, {
    form: { grant_type: 'client_credentials' },
    headers: { authorization: basic },
  });
  return { url, token: token.body.access_token };
}

function hook(b: Bank, method: 'GET' | 'POST', path: string, body?: unknown) {
  return call(method, `${b.url}/test${path}`, {
    headers: { authorization: basic },
    ...(body !== undefined && { body }),
  });
}

async function holder(b: Bank, username: string, balance: string, accountNumber?: string): Promise<string> {
  const made = await hook(b, 'POST', '/payers', {
    username,
    balance,
    ...(accountNumber && { account_number: accountNumber }),
  });
  assert.equal(made.status, 201, made.text);
  return made.body.Data.AccountNumber;
}

async function balanceOf(b: Bank, username: string): Promise<string> {
  return (await hook(b, 'GET', `/payers/${username}`)).body.Data.Balance.Amount;
}

const accountOf = (Identification: string, Name: string): Account => ({
  SchemeName: 'BECSElectronicCredit',
  Identification,
  Name,
});

/** An enduring consent to pay `to`, approved by `username` through the authorise hook. */
async function approvedConsent(b: Bank, username: string, to: Account) {
  const created = await call('POST', `${b.url}/enduring-payment-consents`, {
    token: b.token,
    headers: { 'x-idempotency-key': key() },
    body: {
      Data: {
        Consent: {
          FromDateTime: '2026-01-01T00:00:00Z',
          MaximumAmount: nzd('100.00'),
          Frequency: { Period: 'Monthly', TotalAmount: nzd('100.00') },
          CreditorAccount: [to],
        },
      },
      Risk: {},
    },
  });
  assert.equal(created.status, 201, created.text);
  const consentId: string = created.body.Data.ConsentId;
  const approved = await hook(b, 'POST', '/authorise', {
    consent_id: consentId,
    redirect_uri: client.redirectUris[0],
    state: 's',
    username,
  });
  assert.equal(approved.status, 200, approved.text);
  const exchanged = await call('POST', `${b.url}/token`, {
    form: {
      grant_type: 'authorization_code',
      code: new URL(approved.body.Data.RedirectUri).searchParams.get('code')!,
      redirect_uri: client.redirectUris[0],
    },
    headers: { authorization: basic },
  });
  assert.equal(exchanged.status, 200, exchanged.text);
  return { consentId, to, token: exchanged.body.access_token as string };
}

async function pay(b: Bank, consent: Awaited<ReturnType<typeof approvedConsent>>, amount: string, to = consent.to) {
  const reply = await call('POST', `${b.url}/domestic-payments`, {
    token: consent.token,
    headers: { 'x-idempotency-key': key() },
    body: {
      Data: {
        ConsentId: consent.consentId,
        Initiation: {
          InstructionIdentification: 'R-1',
          EndToEndIdentification: 'R-1',
          InstructedAmount: nzd(amount),
          CreditorAccount: to,
          RemittanceInformation: remittance('R-1'),
        },
      },
      Risk: {},
    },
  });
  if (reply.status !== 201) return { refused: reply.body?.Errors?.[0]?.ErrorCode as string } as never;
  assert.equal(reply.status, 201, reply.text);
  return reply.body.Data as { DomesticPaymentId: string; Status: string };
}

test('a payment debits the payer and credits the holder of its creditor account; a refund goes back the other way', async (t) => {
  const b = await bank(t);
  const payerAccount = await holder(b, 'alice', '50.00');
  await holder(b, 'acme', '0.00', creditor.Identification);

  const paid = await pay(b, await approvedConsent(b, 'alice', creditor), '12.50');
  assert.equal(paid.Status, 'AcceptedSettlementCompleted');
  assert.deepEqual([await balanceOf(b, 'alice'), await balanceOf(b, 'acme')], ['37.50', '12.50']);

  const refund = await approvedConsent(b, 'acme', accountOf(payerAccount, 'Alice'));
  assert.equal((await pay(b, refund, '2.50')).Status, 'AcceptedSettlementCompleted');
  assert.deepEqual([await balanceOf(b, 'alice'), await balanceOf(b, 'acme')], ['40.00', '10.00']);
});

test('a holder with the refund arrangement pays any account under its consent; one without it only the accounts named', async (t) => {
  const b = await bank(t);
  const aliceAccount = await holder(b, 'alice', '50.00');
  const bobAccount = await holder(b, 'bob', '50.00');
  const merchant = await hook(b, 'POST', '/payers', {
    username: 'shop-refunds',
    balance: '100.00',
    account_number: creditor.Identification,
    refund_arrangement: true,
  });
  assert.equal(merchant.status, 201, merchant.text);
  // the consent names the merchant's own account, as a refund authority does; the refunds go to payers
  const authority = await approvedConsent(b, 'shop-refunds', creditor);
  assert.equal(
    (await pay(b, authority, '3.00', accountOf(aliceAccount, 'Alice'))).Status,
    'AcceptedSettlementCompleted',
  );
  assert.equal((await pay(b, authority, '2.00', accountOf(bobAccount, 'Bob'))).Status, 'AcceptedSettlementCompleted');
  assert.deepEqual(
    [await balanceOf(b, 'alice'), await balanceOf(b, 'bob'), await balanceOf(b, 'shop-refunds')],
    ['53.00', '52.00', '95.00'],
  );
  // without the arrangement, the payment must go to an account the consent names
  const plain = await approvedConsent(b, 'alice', creditor);
  const refused = (await pay(b, plain, '1.00', accountOf(bobAccount, 'Bob'))) as unknown as { refused: string };
  assert.equal(refused.refused, 'Resource.Consent.Mismatch');
  assert.equal(await balanceOf(b, 'bob'), '52.00');
});

test('a held payment rejected at release gives the payer the debit back and takes the credit back', async (t) => {
  const b = await bank(t);
  await holder(b, 'alice', '50.00');
  await holder(b, 'acme', '1.00', creditor.Identification);
  const consent = await approvedConsent(b, 'alice', creditor);
  assert.equal((await hook(b, 'POST', `/consents/${consent.consentId}/delay`, {})).status, 200);

  const held = await pay(b, consent, '5.00');
  assert.equal(held.Status, 'AcceptedSettlementInProcess');
  assert.deepEqual([await balanceOf(b, 'alice'), await balanceOf(b, 'acme')], ['45.00', '6.00']);

  const released = await hook(b, 'POST', `/payments/${held.DomesticPaymentId}/release`, { outcome: 'rejected' });
  assert.equal(released.body.Data.Status, 'Rejected', released.text);
  assert.deepEqual([await balanceOf(b, 'alice'), await balanceOf(b, 'acme')], ['50.00', '1.00']);

  // A second release finds nothing held: the money does not move twice.
  await hook(b, 'POST', `/payments/${held.DomesticPaymentId}/release`, { outcome: 'rejected' });
  assert.deepEqual([await balanceOf(b, 'alice'), await balanceOf(b, 'acme')], ['50.00', '1.00']);
});

test('a payment to an account the bank does not hold debits the payer and credits no one', async (t) => {
  const b = await bank(t);
  await holder(b, 'alice', '50.00');
  await holder(b, 'bystander', '7.00');

  const paid = await pay(b, await approvedConsent(b, 'alice', creditor), '10.00');
  assert.equal(paid.Status, 'AcceptedSettlementCompleted');
  assert.deepEqual([await balanceOf(b, 'alice'), await balanceOf(b, 'bystander')], ['40.00', '7.00']);
});

test('POST /test/payers: a number of the holder’s own, if_absent, and the refusals', async (t) => {
  const b = await bank(t);
  const made = await hook(b, 'POST', '/payers', {
    username: 'acme',
    balance: '5.00',
    account_number: '12-3456-7890123-00',
  });
  assert.equal(made.status, 201, made.text);
  assert.deepEqual(made.body, {
    Data: { Username: 'acme', Name: 'acme', AccountNumber: '12-3456-7890123-00', Balance: nzd('5.00') },
  });
  assert.match(await holder(b, 'alice', '1.00'), /^02-0100-\d{7}-00$/);

  const again = { username: 'acme', balance: '99.00', account_number: '12-3456-7890124-00', if_absent: true };
  const existing = await hook(b, 'POST', '/payers', again);
  assert.equal(existing.status, 200, existing.text);
  assert.deepEqual(existing.body, made.body, 'the holder as it is: neither balance nor number changes');
  const absent = await hook(b, 'POST', '/payers', { username: 'bob', balance: '2.00', if_absent: true });
  assert.equal(absent.status, 201, absent.text);

  const refusals: Array<[Record<string, unknown>, string]> = [
    [{ username: 'acme', balance: '5.00' }, 'username'],
    [{ username: 'acme', balance: '5.00', if_absent: false }, 'username'],
    [{ username: 'carol', balance: '5.00', account_number: '12-3456-7890123-00' }, 'account_number'],
    [{ username: 'carol', balance: '5.00', account_number: '12-3456-7890123-00', if_absent: true }, 'account_number'],
    [{ username: 'carol', balance: '5.00', account_number: '12-3456-7890123-000' }, 'account_number'],
    [{ username: 'carol', balance: '5.00', account_number: '123456789012300' }, 'account_number'],
    [{ username: 'carol', balance: '5.00', account_number: '12-3456-789012-00' }, 'account_number'],
    [{ username: 'carol', balance: '5.00', account_number: 'not a number' }, 'account_number'],
    [{ username: 'carol', balance: '5.00', if_absent: 'yes' }, 'if_absent'],
  ];
  for (const [body, path] of refusals) {
    const refused = await hook(b, 'POST', '/payers', body);
    assert.deepEqual(
      [refused.status, refused.body.Errors[0].ErrorCode, refused.body.Errors[0].Path],
      [400, 'Field.Invalid', path],
      JSON.stringify(body),
    );
  }
  assert.equal((await hook(b, 'GET', '/payers/carol')).status, 400, 'no holder is made by a refused call');
});

test('an account number is compared in its one form, however it is spelled', () => {
  for (const spelled of ['12-3456-7890123-00', '12 3456 7890123 00', '1234567890123000', '12-3456-7890123-000']) {
    assert.equal(canonicalAccountNumber(spelled), '12-3456-7890123-00', spelled);
  }
  assert.equal(canonicalAccountNumber('12-3456-7890123-100'), '12-3456-7890123-100');
});

test('migration 0031 gives every holder but the first of a shared account number a new number', async (t) => {
  const testDb = await freshDb();
  t.after(testDb.drop);
  const db = testDb.db as unknown as Kysely<any>;
  await migrateSandboxTo(db, '0009-sandbox-usage');
  const holders = ['first', 'second', 'third'].map((username, i) => ({
    id: `payer-${i}`,
    username,
    name: username,
    account_number: '02-0100-0000001-00',
    balance_cents: 0,
    created_at: 1000 + i,
  }));
  await db.insertInto('sandbox_payers').values(holders).execute();

  await migrateSandboxBank(db);
  const numbers = await db.selectFrom('sandbox_payers').select(['username', 'account_number']).orderBy('id').execute();
  assert.equal(numbers[0].account_number, '02-0100-0000001-00');
  assert.equal(new Set(numbers.map((row) => row.account_number)).size, 3);
  for (const row of numbers) assert.match(row.account_number, /^02-0100-\d{7}-00$/);
});

/** The bank's own migrations up to `name`, as migrateSandboxBank runs them all. */
async function migrateSandboxTo(db: Kysely<any>, name: string): Promise<void> {
  const schema =
    engineOf(db) === 'postgres'
      ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]?.schema
      : undefined;
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => sandboxBankMigrations },
    ...(schema && { migrationTableSchema: schema }),
  });
  const { error } = await migrator.migrateTo(name);
  if (error) throw error instanceof Error ? error : new Error(String(error));
}

test('payments both ways between two holders at once all go through, and no money is made or lost', async (t) => {
  const b = await bank(t);
  const aliceAccount = await holder(b, 'alice', '100.00');
  await holder(b, 'acme', '100.00', creditor.Identification);
  const toAcme = await approvedConsent(b, 'alice', creditor);
  const toAlice = await approvedConsent(b, 'acme', accountOf(aliceAccount, 'Alice'));

  // Enough at once that, without one order of locking the two balances, PostgreSQL finds a deadlock.
  const payments = await Promise.all(
    Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? pay(b, toAcme, '1.00') : pay(b, toAlice, '2.00'))),
  );
  assert.ok(payments.every((payment) => payment.Status === 'AcceptedSettlementCompleted'));
  assert.deepEqual([await balanceOf(b, 'alice'), await balanceOf(b, 'acme')], ['120.00', '80.00']);
});
