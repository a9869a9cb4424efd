import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp, createTestMerchant } from '../../../test/helpers.ts';
import { transact } from '../../store/store.ts';
import { EVENT_TYPES, maskSecret, secretFieldOf, type EventType } from './events.builders.ts';
import { emitEvent } from './events.service.ts';

// The fields each event carries (docs/webhooks.md, "The event"), written out here independently of the builders.
const SPEC_FIELDS: Record<EventType, string[]> = {
  'request.created': ['id', 'merchant_identifier', 'user_id', 'created_at', 'expires_at'],
  'request.expired': ['id', 'user_id', 'merchant_identifier', 'status', 'updated_at'],
  'request.status_updated': ['id', 'user_id', 'merchant_identifier', 'status', 'updated_at'],
  'payment.created': ['id', 'request_id', 'user_id', 'merchant_identifier', 'status', 'updated_at'],
  'payment.status_updated': ['id', 'request_id', 'user_id', 'merchant_identifier', 'status', 'updated_at'],
  'recurring_payment.authorised': ['id', 'merchant_identifier', 'status', 'token'],
  'recurring_payment.revoked': ['id', 'merchant_identifier', 'status'],
  'recurring_payment.expired': ['id', 'merchant_identifier', 'status'],
  'subscription.created': ['id', 'request_id', 'user_id', 'merchant_identifier', 'created_at'],
  'subscription.charge_failed': [
    'id',
    'user_id',
    'merchant_identifier',
    'last_payment_id',
    'last_error',
    'attempts',
    'charge_at',
    'next_attempt_at',
    'updated_at',
  ],
  'subscription.charge_skipped': [
    'id',
    'user_id',
    'merchant_identifier',
    'attempts',
    'skipped_charge_at',
    'next_charge_at',
    'updated_at',
  ],
  'subscription.completed': ['id', 'user_id', 'merchant_identifier', 'updated_at'],
  'subscription.cancelled': ['id', 'user_id', 'merchant_identifier', 'updated_at'],
  'subscription.paused': ['id', 'user_id', 'merchant_identifier', 'updated_at'],
  'subscription.resumed': ['id', 'user_id', 'merchant_identifier', 'updated_at'],
  'customer.created': ['id', 'user_id', 'created_at', 'email', 'first_name', 'last_name', 'phone', 'address'],
  'customer.updated': ['id', 'user_id', 'updated_at', 'email', 'first_name', 'last_name', 'phone', 'address'],
  'webhook_endpoint.disabled': ['id', 'url', 'disabled_at', 'failing_since'],
  // docs/refunds.md
  'refund.created': ['id', 'payment_id', 'request_id', 'user_id', 'amount', 'status', 'created_at'],
  'refund.status_updated': [
    'id',
    'payment_id',
    'request_id',
    'user_id',
    'status',
    'failure_reason',
    'action_reason',
    'updated_at',
  ],
  'refund_authority.status_updated': ['id', 'user_id', 'status', 'revoked_by', 'updated_at'],
  // docs/reconciliation.md
  'payment.reconciled': [
    'id',
    'request_id',
    'user_id',
    'statement_line_id',
    'posted_on',
    'amount',
    'method',
    'reconciled_at',
  ],
};

const address = {
  address1: '1 Queen St',
  address2: '',
  address3: '',
  address4: '',
  city: 'Auckland',
  postcode: '1010',
};
// A superset of every type's fields plus strays, so the builders must pick exactly the documented ones.
const everything = {
  id: 'x_1',
  merchant_identifier: 'order-1',
  user_id: 'user_1',
  request_id: 'request_1',
  created_at: '2026-11-21T10:00:00.000Z',
  updated_at: '2026-11-21T10:00:00.000Z',
  expires_at: null,
  status: 'active',
  token: 'tok',
  last_payment_id: 'payment_1',
  last_error: 'insufficient_funds',
  attempts: 2,
  charge_at: '2026-11-21T10:00:00.000Z',
  next_attempt_at: '2026-11-22T10:00:00.000Z',
  skipped_charge_at: '2026-11-21T10:00:00.000Z',
  next_charge_at: '2026-12-21T10:00:00.000Z',
  email: 'payer@example.com',
  first_name: 'Ana',
  last_name: 'Ngata',
  phone: '+64 21 000 000',
  address,
  url: 'https://example.com/hooks',
  disabled_at: '2026-11-21T10:00:00.000Z',
  failing_since: '2026-11-18T10:00:00.000Z',
  secret_internal: 'must not leak',
  amount_cents: 1000,
  payment_id: 'payment_1',
  amount: { value: '1.00 NZD', formatted: '$1.00' },
  failure_reason: null,
  action_reason: null,
  revoked_by: null,
  statement_line_id: 'stline_1',
  posted_on: '2026-11-21',
  method: 'particulars',
  reconciled_at: '2026-11-21T10:00:00.000Z',
};

test('every event type carries exactly the documented fields, in the documented envelope', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  assert.deepEqual([...EVENT_TYPES].sort(), Object.keys(SPEC_FIELDS).sort());
  const now = Date.parse('2026-11-21T10:00:00.000Z');
  for (const type of EVENT_TYPES) {
    const envelope = await transact(app.deps.db, (trx) =>
      emitEvent(trx, { userId: merchant.userId, mode: 'test' }, type, 'x_1', everything as any, now, {
        secrets: app.deps.secrets,
      }),
    );
    const stored = await app.deps.db
      .selectFrom('events')
      .selectAll()
      .where('id', '=', envelope.id)
      .executeTakeFirstOrThrow();
    const sent = JSON.parse(stored.body);
    assert.deepEqual(sent, envelope);
    assert.deepEqual(Object.keys(sent.data), SPEC_FIELDS[type], type);
    assert.match(sent.id, /^event_[0-9A-Z]{26}$/);
    assert.equal(sent.type, type);
    assert.equal(sent.created_at, '2026-11-21T10:00:00.000Z');
    if (type === 'request.status_updated') assert.deepEqual(Object.keys(sent), ['id', 'type', 'created_at', 'data']);
    else assert.deepEqual(Object.keys(sent), ['id', 'type', 'version', 'created_at', 'data']);
    if (type === 'request.status_updated') assert.equal('version' in sent, false);
    else assert.equal(sent.version, 1);
    assert.equal(stored.object_id, 'x_1');
    // the secret an event carries is stored masked and sealed beside it, in one place for every type
    const field = secretFieldOf(type);
    if (field !== null) {
      const secret = (everything as Record<string, unknown>)[field] as string;
      assert.equal((sent.data as Record<string, unknown>)[field], maskSecret(secret));
      assert.equal(app.deps.secrets.open(stored.secret_sealed!), secret);
    } else assert.equal(stored.secret_sealed, null);
  }
});

test('charge_failed leaves out next_attempt_at after the final retry', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const { next_attempt_at: _dropped, ...final } = everything;
  const envelope = await transact(app.deps.db, (trx) =>
    emitEvent(
      trx,
      { userId: merchant.userId, mode: 'live' },
      'subscription.charge_failed',
      'x_1',
      final as any,
      Date.now(),
    ),
  );
  assert.deepEqual(
    Object.keys(envelope.data),
    SPEC_FIELDS['subscription.charge_failed'].filter((f) => f !== 'next_attempt_at'),
  );
});
