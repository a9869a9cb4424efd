import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  COUNTED_STATUSES,
  countedChange,
  effectiveConsentStatus,
  enduringPeriodOf,
  executionFingerprint,
  hashConsentToken,
  limitRefusalError,
  newConsentToken,
  NO_USAGE,
  periodUsageOf,
} from './consents.rules.ts';
import { checkLimits, LimitPeriod } from './limits.ts';

test('tokens carry 256 random bits, are never repeated, and only their SHA-256 is kept', () => {
  const tokens = new Set(Array.from({ length: 2000 }, newConsentToken));
  assert.equal(tokens.size, 2000);
  for (const token of [...tokens].slice(0, 20)) {
    assert.match(token, /^rct_[A-Za-z0-9_-]{43}$/);
    const hash = hashConsentToken(token);
    assert.match(hash, /^[0-9a-f]{64}$/);
    assert.ok(!hash.includes(token.slice(4, 12)));
  }
});

test('the execution fingerprint changes with every parameter and only with them', () => {
  const input = fc.record({
    tokenHash: fc.stringMatching(/^[0-9a-f]{4}$/),
    amountCents: fc.integer({ min: 1, max: 10_000_000 }),
    reference: fc.option(fc.stringMatching(/^[a-zA-Z0-9-]{0,12}$/)),
    merchantIdentifier: fc.option(fc.string({ maxLength: 20 })),
  });
  fc.assert(
    fc.property(input, input, (a, b) => {
      const same =
        a.tokenHash === b.tokenHash &&
        a.amountCents === b.amountCents &&
        a.reference === b.reference &&
        a.merchantIdentifier === b.merchantIdentifier;
      assert.equal(executionFingerprint(a) === executionFingerprint(b), same);
      assert.equal(executionFingerprint(a), executionFingerprint({ ...a }));
    }),
  );
  // An empty reference and no reference are different requests.
  const base = { tokenHash: 'ab', amountCents: 100, merchantIdentifier: null };
  assert.notEqual(executionFingerprint({ ...base, reference: '' }), executionFingerprint({ ...base, reference: null }));
});

test('a consent past its end reads as expired before the job has run; revoked stays revoked', () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 2 ** 42 }), fc.integer({ min: -1e9, max: 1e9 }), (endAt, delta) => {
      const now = endAt + delta;
      assert.equal(effectiveConsentStatus({ status: 'active', end_at: endAt }, now), delta > 0 ? 'expired' : 'active');
      assert.equal(effectiveConsentStatus({ status: 'revoked', end_at: endAt }, now), 'revoked');
      assert.equal(effectiveConsentStatus({ status: 'active', end_at: null }, now), 'active');
    }),
  );
});

test("periods map to the standard's enduring-consent periods", () => {
  assert.deepEqual(LimitPeriod.map(enduringPeriodOf), ['Daily', 'Weekly', 'Fortnightly', 'Monthly', 'Annual']);
});

test('every refusal becomes a 422 payment_rejected.<limit> whose params never show a negative remainder', () => {
  const limits = fc.record({
    period: fc.constantFrom(...LimitPeriod),
    anchor_at: fc.integer({ min: 1_790_000_000_000, max: 1_900_000_000_000 }),
    max_per_period_cents: fc.integer({ min: 1, max: 1_000_000 }),
    max_per_payment_cents: fc.option(fc.integer({ min: 1, max: 1_000_000 })),
    total_count: fc.option(fc.integer({ min: 1, max: 20 })),
    total_amount_cents: fc.option(fc.integer({ min: 1, max: 2_000_000 })),
    end_at: fc.option(fc.integer({ min: 1_800_000_000_000, max: 1_900_000_000_000 })),
  });
  const used = fc.record({
    amount_cents: fc.integer({ min: 0, max: 3_000_000 }),
    count: fc.integer({ min: 0, max: 30 }),
  });
  fc.assert(
    fc.property(
      limits,
      used,
      used,
      fc.integer({ min: 1, max: 2_000_000 }),
      fc.integer({ min: 1_800_000_000_000, max: 1_900_000_000_000 }),
      (l, total, period, amount, at) => {
        const check = checkLimits(l, { total, period }, amount, at);
        if (check.ok) return;
        const error = limitRefusalError(check, l.period, amount);
        assert.equal(error.code, `payment_rejected.${check.reason}`);
        assert.equal(error.status, 422);
        const remaining = error.params.remaining;
        if (typeof remaining === 'string') assert.ok(!remaining.startsWith('-'));
        if (typeof remaining === 'number') assert.ok(remaining >= 0);
      },
    ),
  );
});

test('a status change moves the counted payments by -1 when a payment stops counting, +1 when it starts, else 0', () => {
  const statuses = [...COUNTED_STATUSES, 'failed', 'cancelled'];
  for (const from of statuses) {
    for (const to of statuses) {
      const counts = (s: string) => (COUNTED_STATUSES as readonly string[]).includes(s);
      assert.equal(countedChange(from, to), Number(counts(to)) - Number(counts(from)), `${from} → ${to}`);
    }
  }
  assert.equal(countedChange('awaiting-consent', 'failed'), -1);
  assert.equal(countedChange('unconfirmed', 'failed'), -1);
  assert.equal(countedChange('unconfirmed', 'successful'), 0);
});

test('the period counters answer only for the exact window they hold', () => {
  const window = { start: 1_000, end: 2_000 };
  const held = { ...NO_USAGE, period_start: 1_000, period_end: 2_000, period_count: 3, period_cents: 450 };
  assert.deepEqual(periodUsageOf(held, window), { amount_cents: 450, count: 3 });
  assert.equal(periodUsageOf(NO_USAGE, window), null, 'no window held yet');
  assert.equal(periodUsageOf(held, { start: 2_000, end: 3_000 }), null, 'the next window');
  assert.equal(periodUsageOf(held, { start: 0, end: 1_000 }), null, 'an earlier window');
  assert.equal(periodUsageOf({ ...held, period_end: 2_001 }, window), null);
});
