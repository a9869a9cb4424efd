import { test } from 'node:test';
import assert from 'node:assert/strict';
import { apiClient, buildTestApp, createTestMerchant } from '../../../test/helpers.ts';
import { insertPaymentIfParticularsFree, insertPaymentLater, isParticularsClash } from './payments.repo.ts';
import { transact } from '../../store/store.ts';
import type { PaymentRow } from './payments.tables.ts';

// Particulars are drawn at random and written without looking first: the unique index decides,
// and a clash must write nothing so that the caller can draw again.

test('a payment whose particulars are taken is not written; other constraints still fail loudly', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const created = await apiClient(app, merchant.testKey).post('/v1/requests', {
    bank_account_id: merchant.bankAccountId,
    amount: '5.00 NZD',
    message: 'Particulars',
  });
  assert.equal(created.status, 201, created.text);
  const db = app.deps.db;
  const row = (id: string, particulars: string): PaymentRow => ({
    id,
    user_id: merchant.userId,
    mode: 'test',
    request_id: created.body.request.id,
    status: 'awaiting-consent',
    amount_cents: 500,
    settled_cents: 1,
    bank_id: null,
    particulars,
    code: 'TONO',
    reference: null,
    merchant_identifier: null,
    bank_consent_id: null,
    bank_payment_id: null,
    auth_state: null,
    recurring_consent_id: null,
    subscription_id: null,
    idempotency_key: null,
    fingerprint: null,
    failure_reason: null,
    created_at: 1,
    updated_at: 1,
    completed_at: null,
    submitted_at: null,
    channel: null,
    payer_account_sealed: null,
    refunded_cents: 0,
    submission_token_sealed: null,
  });

  assert.equal(await insertPaymentIfParticularsFree(db, row('payment_a', 'V-AAAAAA')), true);
  assert.equal(await insertPaymentIfParticularsFree(db, row('payment_b', 'V-AAAAAA')), false);
  assert.equal(await insertPaymentIfParticularsFree(db, row('payment_b', 'V-BBBBBB')), true);
  const stored = await db
    .selectFrom('payments')
    .select(['id', 'particulars'])
    .where('request_id', '=', created.body.request.id)
    .orderBy('id')
    .execute();
  assert.deepEqual(
    stored.map((r) => ({ ...r })),
    [
      { id: 'payment_a', particulars: 'V-AAAAAA' },
      { id: 'payment_b', particulars: 'V-BBBBBB' },
    ],
  );
  // A clash on anything but the particulars (here the id) is an error, not a silent no-op.
  await assert.rejects(insertPaymentIfParticularsFree(db, row('payment_a', 'V-CCCCCC')));

  // Inserted without waiting for the answer, a clash fails the transaction at its next awaited
  // statement (or its commit), and the error says which index refused it.
  const failureOf = async (payment: PaymentRow) => {
    try {
      await transact(db, async (trx) => {
        await insertPaymentLater(trx, payment);
        await trx.selectFrom('payments').select('id').where('id', '=', payment.id).execute();
      });
    } catch (error) {
      return error;
    }
    assert.fail('the clash was not thrown');
  };
  assert.equal(isParticularsClash(await failureOf(row('payment_c', 'V-AAAAAA'))), true);
  assert.equal(isParticularsClash(await failureOf(row('payment_a', 'V-DDDDDD'))), false);
  assert.equal(isParticularsClash(new Error('refused')), false);
  assert.equal(
    await db.selectFrom('payments').select('id').where('id', '=', 'payment_c').executeTakeFirst(),
    undefined,
  );
  await transact(db, (trx) => insertPaymentLater(trx, row('payment_c', 'V-CCCCCC')));
  assert.equal(
    (await db.selectFrom('payments').select('particulars').where('id', '=', 'payment_c').executeTakeFirst())
      ?.particulars,
    'V-CCCCCC',
  );
});
