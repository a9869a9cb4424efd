import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { bankIdempotencyKey, outcomeOf, refusalOf, statementName } from './open-banking.mapping.ts';
import { codeToReason, reasonToCode } from '../../shared/open-banking.wire.ts';

test('idempotency keys fit the standard: at most 40 printable characters, same key same result', () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 300 }), (key) => {
      const sent = bankIdempotencyKey(key);
      assert.ok(sent.length >= 1 && sent.length <= 40 && /^[\x21-\x7e]+$/.test(sent));
      assert.equal(bankIdempotencyKey(key), sent);
    }),
  );
  assert.equal(bankIdempotencyKey('pay-1'), 'pay-1');
  assert.notEqual(bankIdempotencyKey('x'.repeat(41)), bankIdempotencyKey('x'.repeat(42)));
});

test('failure reasons (words of two letters or more) survive the trip through StatusReasonCode', () => {
  fc.assert(
    fc.property(fc.stringMatching(/^[a-z]{2,8}(_[a-z]{2,8}){0,3}$/), (reason) => {
      assert.equal(codeToReason(reasonToCode(reason)), reason);
    }),
  );
  assert.equal(reasonToCode('insufficient_funds'), 'InsufficientFunds');
});

test('statuses map to outcomes, and refusals to reasons', () => {
  assert.deepEqual(outcomeOf('AcceptedSettlementCompleted', undefined), { outcome: 'successful' });
  // The standard has no reason: only the sandbox bank's own header names one.
  assert.deepEqual(outcomeOf('Rejected', 'FraudCheck'), { outcome: 'failed', failureReason: 'fraud_check' });
  assert.deepEqual(outcomeOf('Rejected', 'not a code'), { outcome: 'failed', failureReason: 'declined' });
  assert.deepEqual(outcomeOf('Rejected', undefined), { outcome: 'failed', failureReason: 'declined' });
  assert.deepEqual(outcomeOf('Pending', undefined), { outcome: 'pending' });
  assert.deepEqual(outcomeOf('AcceptedSettlementInProcess', undefined), { outcome: 'pending' });
  assert.equal(outcomeOf('Weird', undefined), null);
  const error = (ErrorCode: string, Message = 'm') => ({
    Code: '400 BadRequest',
    Message,
    Errors: [{ ErrorCode, Message }],
  });
  assert.equal(refusalOf(400, error('Resource.Consent.Exceed.TotalCount')).limit, 'total_count');
  assert.equal(refusalOf(400, error('Resource.Consent.Exceed.Dates')).limit, 'end_date');
  assert.equal(
    refusalOf(400, error('Resource.Consent.InvalidStatus', 'Consent status is Rejected; …')).reason,
    'consent_not_active',
  );
  assert.equal(
    refusalOf(400, error('Resource.Consent.InvalidStatus', 'Consent status is Revoked; …')).reason,
    'consent_revoked',
  );
  // A bank's own words, not the sandbox's
  const byWords: Array<[string, string]> = [
    ['The consent has been revoked by the customer', 'consent_revoked'],
    ['Consent withdrawn at the bank', 'consent_revoked'],
    ['This consent expired on 2026-11-01', 'consent_expired'],
    ['Consent status is Expired', 'consent_expired'],
    ['The consent has not been authorised', 'consent_not_active'],
  ];
  for (const [message, reason] of byWords)
    assert.equal(refusalOf(400, error('Resource.Consent.InvalidStatus', message)).reason, reason, message);
  assert.equal(statementName('The Very Long Merchant Name Limited'), 'The Very Long Mercha');
  assert.equal(statementName('Acme Coffee'), 'Acme Coffee');
  assert.deepEqual(refusalOf(418, undefined), {
    ok: false,
    reason: 'bank_refused',
    message: 'The bank refused the request (418)',
    bankCode: 'http_418',
    unknown: false,
  });
});
